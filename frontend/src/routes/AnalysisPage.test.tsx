// @vitest-environment jsdom
// The analysis page reads its runs from ?runs=, explains how to pick them when there are none, refuses what is not a
// list of run ids, and offers the comparison of a selection small enough to compare.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run } from "../api/client";
import { apiError, fakeNetwork, json } from "../test/network";
import { renderInApp } from "../test/render";
import { AnalysisPage } from "./AnalysisPage";

function run(id: number, status: Run["status"] = "succeeded"): Run {
  return {
    id,
    name: `run-${id}`,
    status,
    objective: "sft",
    method: "lora",
    model: "tunelab-tiny",
    config: { params: { learning_rate: id * 1e-4 } },
    progress: { current_step: status === "running" ? 30 : 60, total_steps: 60, eta_seconds: null, percent: null },
    best_eval_loss: 1 + id / 10,
  } as unknown as Run;
}

function fakeRuns(runs: Run[]) {
  fakeNetwork((request) => {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/api/v1/runs") {
      const ids = url.searchParams.getAll("ids").map(Number);
      const data = runs.filter((r) => ids.includes(r.id));
      return json({ data, count: data.length, next_cursor: null });
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
  });
}

describe("AnalysisPage", () => {
  it("explains how to pick runs when none are selected", () => {
    renderInApp(<AnalysisPage />, { at: "/analysis", path: "/analysis" });
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("Parameters and results");
    expect(screen.getByText("No runs selected")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "runs list" })).toHaveAttribute("href", "/");
    expect(screen.queryByTestId("analysis-compare")).toBeNull();
  });

  it("refuses what is not a run id, and more runs than it draws", () => {
    const { unmount } = renderInApp(<AnalysisPage />, { at: "/analysis?runs=1,abc", path: "/analysis" });
    expect(screen.getByTestId("analysis-message")).toHaveTextContent("Not run ids: abc");
    unmount();
    const many = Array.from({ length: 201 }, (_, i) => i + 1).join(",");
    renderInApp(<AnalysisPage />, { at: `/analysis?runs=${many}`, path: "/analysis" });
    expect(screen.getByTestId("analysis-message")).toHaveTextContent("201 runs selected; draw at most 200 at once.");
  });

  it("draws the runs in the address, links their comparison, and takes new ids from its form", async () => {
    fakeRuns([run(1), run(2), run(3), run(4, "running")]);
    renderInApp(<AnalysisPage />, { at: "/analysis?runs=1,2,4", path: "/analysis" });
    expect(await screen.findByTestId("parallel-coordinates")).toHaveAttribute("data-lines", "2");
    expect(screen.getByTestId("analysis-compare")).toHaveAttribute("href", "/compare?runs=1,2,4");
    expect(screen.getByTestId("analysis-not-drawn")).toHaveTextContent("run 4 (running, step 30 of 60)");

    const ids = screen.getByTestId("analysis-ids");
    await userEvent.clear(ids);
    await userEvent.type(ids, "1,2,3{Enter}");
    await waitFor(() => expect(screen.getByTestId("parallel-coordinates")).toHaveAttribute("data-lines", "3"));
    expect(screen.queryByTestId("analysis-not-drawn")).toBeNull();
  });
});
