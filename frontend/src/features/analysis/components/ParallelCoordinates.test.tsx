// @vitest-environment jsdom
// The parallel coordinates draw a line per succeeded run and none for another, on axes whose ends read apart; a line
// reads its run on hover and opens it on click.
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { renderInApp } from "../../../test/render";
import { buildAxis, extractDimensions, type NumericAxis } from "../dimensions";
import { ParallelCoordinates } from "./ParallelCoordinates";

function run(id: number, status: Run["status"], learning_rate: number, best_eval_loss: number | null, current_step = 60): Run {
  return {
    id,
    name: `lr-${learning_rate}`,
    status,
    objective: "sft",
    method: "lora",
    model: "tunelab-tiny",
    config: { params: { learning_rate, lora_r: 8 + id } },
    progress: { current_step, total_steps: 60, eta_seconds: null, percent: null },
    best_eval_loss,
  } as unknown as Run;
}

const runs = [run(1, "succeeded", 1e-5, 1.4), run(2, "succeeded", 1e-4, 1.1), run(3, "succeeded", 1e-3, 1.3), run(12, "running", 3e-4, 0.9, 40)];

function setUp() {
  const drawn = runs.filter((r) => r.status === "succeeded");
  const axes = extractDimensions(drawn).map((d) => buildAxis(d, drawn));
  const colorAxis = axes.find((a) => a.dimension.key === "figure:best_eval_loss") as NumericAxis;
  return { axes, colorAxis };
}

describe("ParallelCoordinates", () => {
  it("draws a line per succeeded run and none for a running one, even when handed it", () => {
    const { axes, colorAxis } = setUp();
    renderInApp(<ParallelCoordinates runs={runs} axes={axes} colorAxis={colorAxis} />);
    const chart = screen.getByTestId("parallel-coordinates");
    expect(chart).toHaveAttribute("data-lines", "3");
    expect(chart.querySelector("[data-run-id='12']")).toBeNull();
    expect([...chart.querySelectorAll("g[data-run-id]")].map((g) => g.getAttribute("data-run-id"))).toEqual(["1", "3", "2"]);
    expect(chart.querySelector("svg")).toHaveAttribute("aria-label", expect.stringContaining("3 runs across learning_rate (log), lora_r, Best eval loss"));
  });

  it("labels each axis's ends, a log axis by decade", () => {
    const { axes, colorAxis } = setUp();
    renderInApp(<ParallelCoordinates runs={runs} axes={axes} colorAxis={colorAxis} />);
    const lr = screen.getByTestId("parallel-coordinates").querySelector("[data-axis='param:learning_rate']");
    expect(lr).toHaveAttribute("data-scale", "log");
    const ticks = [...(lr?.querySelectorAll("text.analysis-tick") ?? [])].map((t) => t.textContent);
    expect(ticks).toEqual(["0.001", "1.00e-5"]);
  });

  it("shows a hovered run's values and opens it on click", async () => {
    const { axes, colorAxis } = setUp();
    renderInApp(<ParallelCoordinates runs={runs} axes={axes} colorAxis={colorAxis} />, {
      routes: <Route path="/runs/:runId" element={<p>run page</p>} />,
    });
    const hit = screen.getByTestId("parallel-coordinates").querySelector("g[data-run-id='2'] .analysis-hit");
    await userEvent.hover(hit!);
    const hover = screen.getByTestId("analysis-hover");
    expect(hover).toHaveTextContent("lr-0.0001");
    expect(hover).toHaveTextContent("learning_rate1.00e-4");
    expect(hover).toHaveTextContent("Best eval loss1.1");
    await userEvent.click(hit!);
    expect(await screen.findByText("run page")).toBeInTheDocument();
  });

  it("fades the lines outside a brush", () => {
    const { axes, colorAxis } = setUp();
    const brushes = { "figure:best_eval_loss": { kind: "range" as const, lo: 1, hi: 1.35 } };
    renderInApp(<ParallelCoordinates runs={runs} axes={axes} colorAxis={colorAxis} brushes={brushes} onBrush={() => {}} />);
    const chart = screen.getByTestId("parallel-coordinates");
    const active = [...chart.querySelectorAll("g[data-run-id]")].map((g) => [g.getAttribute("data-run-id"), g.getAttribute("data-active")]);
    expect(active).toEqual([
      ["1", "false"],
      ["3", "true"],
      ["2", "true"],
    ]);
    expect(chart.querySelector("[data-axis='figure:best_eval_loss'] .analysis-brush")).not.toBeNull();
  });

  it("says so when no run has succeeded", () => {
    renderInApp(<ParallelCoordinates runs={[runs[3]]} axes={[]} colorAxis={null} />);
    expect(screen.getByText("No succeeded run to draw yet.")).toBeInTheDocument();
    expect(screen.queryByTestId("parallel-coordinates")).toBeNull();
  });
});
