// @vitest-environment jsdom
// The study page as a user meets it: its runs, the server's cost table with its one "best", a Pareto chart per cost
// with the frontier, and Extend sending more seeds and grid values through the real client.
import "../../../test/canvas";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import type { StudyDetail } from "../api/queries";
import { StudyView } from "./StudyView";

const value = (mean: number) => ({ mean, spread: 0, n: 1 });

function detail(): StudyDetail {
  const run = (id: number, method: string) =>
    ({ id, name: `s · ${method}`, method, seed: 1, status: "succeeded", project_id: 1 }) as Run;
  return {
    study: {
      id: 5, project_id: 1, name: "ranks", created_by: null, created_at: "2026-12-01T00:00:00Z", run_count: 2,
      status_counts: { succeeded: 2 },
      spec: { model: "tunelab-tiny", dataset_id: 1, objective: "sft", methods: ["lora", "ia3"], grid: { r: [4] }, seeds: [1], budget: { max_steps: 4 }, params: {} },
    },
    runs: [run(1, "lora"), run(2, "ia3")],
    cost_table: {
      columns: [
        { key: "trainable_percent", label: "Trainable params", unit: "%", better: "lower", ranked: true },
        { key: "best_eval_loss", label: "Best eval loss", unit: "", better: "lower", ranked: false, not_ranked_reason: "not ranked: runs use different eval splits: …" },
      ],
      rows: [
        { cell: "lora · r=4", method: "lora", grid: { r: 4 }, run_ids: [1], finished_run_ids: [1], unfinished: [], values: { trainable_percent: value(1.5), best_eval_loss: value(1.2) }, best: [] },
        { cell: "ia3", method: "ia3", grid: {}, run_ids: [2], finished_run_ids: [2], unfinished: [], values: { trainable_percent: value(0.1), best_eval_loss: value(1.4) }, best: ["trainable_percent"] },
      ],
      target_loss: 1.4,
      notes: ["not ranked: runs use different eval splits: …", "best: ahead of the runner-up by more than the noise"],
    },
  };
}

function fakeApi() {
  const extended: unknown[] = [];
  fakeNetwork(async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/api/v1/studies/5") return json(detail());
    if (request.method === "POST" && path === "/api/v1/metrics/query") return json({ data: [] });
    if (request.method === "POST" && path === "/api/v1/studies/5/runs") {
      extended.push(await request.json());
      return json(detail(), 201);
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return extended;
}

describe("StudyView", () => {
  it("shows the cost table's best and refusal, and a Pareto chart per cost with its frontier", async () => {
    fakeApi();
    renderInApp(<StudyView studyId={5} />);
    const table = await screen.findByTestId("study-cost-table");
    const best = table.querySelectorAll("[data-best]");
    expect(best).toHaveLength(1);
    expect(within(best[0] as HTMLElement).getByText(/best/)).toBeInTheDocument();
    expect(within(table).getByTestId("not-ranked")).toHaveTextContent("different eval splits");
    const charts = screen.getAllByTestId("pareto-chart");
    expect(charts[0]).toHaveAttribute("data-points", "2");
    // ia3: fewer trainable params but a worse loss; lora: the better loss: both are on the frontier.
    expect(charts[0]).toHaveAttribute("data-frontier", "2");
    expect(charts[1]).toHaveAttribute("data-points", "0");
  });

  it("offers ROUGE-L against trainable % only when a finished run was evaluated by generation", async () => {
    fakeApi();
    const first = renderInApp(<StudyView studyId={5} />);
    await screen.findByTestId("study-cost-table");
    expect(screen.getAllByTestId("pareto-chart")).toHaveLength(3);
    first.unmount();

    const scored = detail();
    const scores = (rouge_l: number) => ({ rouge_l, exact_match: 0.5, bleu: 30, rows: 16 });
    scored.runs[0] = { ...scored.runs[0], generation_eval: { rows_requested: 16, tuned: scores(0.8), base: scores(0.4) } };
    scored.cost_table.columns.push({ key: "generation_rouge_l", label: "ROUGE-L (generated answers)", unit: "", better: "higher", ranked: true });
    scored.cost_table.rows[0].values.generation_rouge_l = value(0.8);
    scored.cost_table.rows[1].values.generation_rouge_l = value(0.6);
    fakeNetwork((request) => {
      const path = new URL(request.url).pathname;
      if (path === "/api/v1/studies/5") return json(scored);
      if (path === "/api/v1/metrics/query") return json({ data: [] });
      return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
    });
    renderInApp(<StudyView studyId={5} />);
    await screen.findByTestId("study-cost-table");
    const rouge = screen.getAllByTestId("pareto-chart")[3];
    expect(rouge).toHaveTextContent("ROUGE-L vs trainable %");
    expect(rouge).toHaveAttribute("data-better", "higher");
    expect(rouge).toHaveAttribute("data-points", "2");
    // lora: the higher ROUGE-L; ia3: fewer trainable params: both are on the frontier.
    expect(rouge).toHaveAttribute("data-frontier", "2");
  });

  it("extends the study with more seeds and values of its grid params", async () => {
    const extended = fakeApi();
    renderInApp(<StudyView studyId={5} />);
    await userEvent.click(await screen.findByTestId("study-extend"));
    await userEvent.type(screen.getByLabelText("More seeds"), "2, 3");
    await userEvent.type(screen.getByLabelText("More values of r"), "8");
    await userEvent.click(screen.getByRole("button", { name: "Add runs" }));
    await waitFor(() => expect(extended).toEqual([{ seeds: [2, 3], methods: [], grid: { r: [8] } }]));
  });

  it("shows no Share, Clone, Extend or Delete to one who may not change the study", async () => {
    fakeApi();
    renderInApp(<StudyView studyId={5} canChange={false} />);
    await screen.findByTestId("study-cost-table");
    expect(screen.queryByTestId("study-actions")).toBeNull();
  });

  it("deletes the study, its runs too when asked in the panel, and reports it", async () => {
    const deleted: string[] = [];
    fakeNetwork(async (request) => {
      const url = new URL(request.url);
      if (request.method === "GET" && url.pathname === "/api/v1/studies/5") return json(detail());
      if (request.method === "POST" && url.pathname === "/api/v1/metrics/query") return json({ data: [] });
      if (request.method === "DELETE" && url.pathname === "/api/v1/studies/5") {
        deleted.push(url.search);
        return new Response(null, { status: 204 });
      }
      return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
    });
    let reported = false;
    renderInApp(<StudyView studyId={5} onDeleted={() => (reported = true)} />);
    await userEvent.click(await screen.findByTestId("study-delete"));
    expect(screen.getByTestId("study-delete-panel")).toHaveTextContent("Keep its 2 runs");
    await userEvent.click(screen.getByTestId("study-delete-with-runs"));
    await userEvent.click(screen.getByTestId("study-delete-confirm"));
    await waitFor(() => expect(reported).toBe(true));
    expect(deleted).toEqual(["?with_runs=true"]);
  });
});
