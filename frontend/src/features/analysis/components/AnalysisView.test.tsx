// @vitest-environment jsdom
// The analysis view asks for the runs in one request through the real client, draws the succeeded ones in both charts
// and lists the others with where they stand, never as a line or a point.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { AnalysisView } from "./AnalysisView";

function run(id: number, overrides: Partial<Run> & { params?: Record<string, unknown> } = {}): Run {
  const { params = {}, ...rest } = overrides;
  return {
    id,
    name: `run-${id}`,
    status: "succeeded",
    objective: "sft",
    method: "lora",
    model: "tunelab-tiny",
    project_id: 1,
    dataset_id: 1,
    config: { params },
    progress: { current_step: 60, total_steps: 60, eta_seconds: null, percent: 100 },
    best_eval_loss: null,
    final_eval_loss: null,
    trainable_percent: null,
    peak_memory_bytes: null,
    tokens_per_second: null,
    wall_time_s: null,
    ...rest,
  } as unknown as Run;
}

const RUNS = [
  run(1, { params: { learning_rate: 1e-4, lora_r: 8 }, best_eval_loss: 1.3, tokens_per_second: 900 }),
  run(2, { params: { learning_rate: 3e-4, lora_r: 16 }, best_eval_loss: 1.1, tokens_per_second: 850 }),
  run(3, { method: "ia3", params: { learning_rate: 1e-2 }, best_eval_loss: 1.6 }),
  // Partial figures that would be the best if they were drawn.
  run(12, {
    status: "running",
    params: { learning_rate: 2e-4, lora_r: 32 },
    best_eval_loss: 0.4,
    progress: { current_step: 40, total_steps: 60, eta_seconds: 20, percent: 66 },
  }),
  run(13, { status: "failed", params: { learning_rate: 1e-3, lora_r: 8 }, best_eval_loss: 0.5, progress: { current_step: 7, total_steps: 60, eta_seconds: null, percent: null } }),
];

function fakeRuns(): URLSearchParams[] {
  const asked: URLSearchParams[] = [];
  fakeNetwork((request) => {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/api/v1/runs") {
      asked.push(url.searchParams);
      const ids = url.searchParams.getAll("ids").map(Number);
      // The server's order (newest first), not the selection's.
      const data = RUNS.filter((r) => ids.includes(r.id)).reverse();
      return json({ data, count: data.length, next_cursor: null });
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
  });
  return asked;
}

describe("AnalysisView", () => {
  it("asks for the selected runs at once, draws the succeeded ones and lists the unfinished ones as not drawn", async () => {
    const asked = fakeRuns();
    renderInApp(<AnalysisView ids={[1, 2, 3, 12, 13, 99]} />);
    const chart = await screen.findByTestId("parallel-coordinates");
    expect(asked[0].getAll("ids")).toEqual(["1", "2", "3", "12", "13", "99"]);
    expect(asked[0].get("limit")).toBe("200");

    expect(chart).toHaveAttribute("data-lines", "3");
    expect(chart.querySelector("[data-run-id='12']")).toBeNull();
    expect(chart.querySelector("[data-run-id='13']")).toBeNull();
    const scatter = screen.getByTestId("param-scatter");
    expect(scatter).toHaveAttribute("data-points", "3");
    expect(scatter.querySelector("[data-run-id='12']")).toBeNull();

    const notDrawn = screen.getByTestId("analysis-not-drawn");
    const items = within(notDrawn).getAllByRole("listitem");
    expect(items.map((li) => li.getAttribute("data-run-id"))).toEqual(["12", "13"]);
    expect(items[0]).toHaveTextContent("run 12 (running, step 40 of 60)");
    expect(items[1]).toHaveTextContent("run 13 (failed at step 7 of 60)");
    expect(within(items[0]).getByRole("link", { name: "run 12" })).toHaveAttribute("href", "/runs/12");
    expect(screen.getByTestId("analysis-message")).toHaveTextContent("Unknown run: #99");
  });

  it("takes its axes from the succeeded runs only, colours by best eval loss, and draws a table of the same runs", async () => {
    fakeRuns();
    renderInApp(<AnalysisView ids={[1, 2, 3, 12, 13]} />);
    const chart = await screen.findByTestId("parallel-coordinates");
    const axes = [...chart.querySelectorAll("[data-axis]")].map((a) => a.getAttribute("data-axis"));
    expect(axes).toEqual(["run:method", "param:learning_rate", "param:lora_r", "figure:best_eval_loss", "figure:tokens_per_second"]);
    // The running run's 0.4 would have been the low end.
    const ticks = chart.querySelectorAll("[data-axis='figure:best_eval_loss'] text.analysis-tick");
    expect([...ticks].map((t) => t.textContent)).toEqual(["1.6", "1.1"]);
    expect(screen.getByTestId("analysis-color")).toHaveValue("figure:best_eval_loss");
    expect(screen.getByTestId("analysis-legend")).toHaveTextContent("lower is better");

    await userEvent.click(screen.getByTestId("analysis-show-table"));
    const table = screen.getByTestId("analysis-table");
    expect([...table.querySelectorAll("tbody tr")].map((tr) => tr.getAttribute("data-run-id"))).toEqual(["1", "2", "3"]);
    expect(within(table).getByRole("link", { name: "run-3" })).toHaveAttribute("href", "/runs/3");
  });

  it("shows only the axes left checked", async () => {
    fakeRuns();
    renderInApp(<AnalysisView ids={[1, 2, 3]} />);
    const chart = await screen.findByTestId("parallel-coordinates");
    await userEvent.click(screen.getByText(/^Axes/));
    await userEvent.click(screen.getByRole("checkbox", { name: "lora_r" }));
    await userEvent.click(screen.getByRole("checkbox", { name: "Tokens/s" }));
    expect([...chart.querySelectorAll("[data-axis]")].map((a) => a.getAttribute("data-axis"))).toEqual([
      "run:method",
      "param:learning_rate",
      "figure:best_eval_loss",
    ]);
    expect(screen.getByText("Axes (3 of 5)")).toBeInTheDocument();
  });

  it("plots learning rate against best eval loss by default and lists a succeeded run lacking a value", async () => {
    fakeRuns();
    renderInApp(<AnalysisView ids={[1, 2, 3]} />);
    const scatter = await screen.findByTestId("param-scatter");
    expect(screen.getByTestId("scatter-x")).toHaveValue("param:learning_rate");
    expect(screen.getByTestId("scatter-y")).toHaveValue("figure:best_eval_loss");
    expect(scatter.querySelector("svg")).toHaveAttribute("aria-label", "Best eval loss against learning_rate (log): 3 runs");

    await userEvent.selectOptions(screen.getByTestId("scatter-y"), "figure:tokens_per_second");
    expect(scatter).toHaveAttribute("data-points", "2");
    expect(screen.getByTestId("scatter-missing")).toHaveTextContent("Not in the scatter: run 3 (no Tokens/s)");
  });
});
