// The runs table's lineage and score columns: the run each started from, linked; the tuned model's generation
// scores and the reward accuracy, the highest of the finished runs marked best; none of them sorts (the server does).
// Logged-metric columns (last, min, max of any key), and the table grouped with each group's mean ± spread.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { renderInApp } from "../../../test/render";
import { DEFAULT_VIEW } from "./runsView";
import type { ColumnId, RunsView } from "./runsView";
import { RunsTable } from "./RunsTable";

function run(id: number, status: Run["status"], fields: Partial<Run> = {}, tuned: { rouge_l: number; exact_match: number; bleu: number } | null = null): Run {
  return {
    id, name: `run-${id}`, status, method: "lora", objective: "sft", model: "tunelab-tiny", dataset_id: null, external: false,
    cancel_requested: false, queued_at: "2026-12-01T10:00:00Z", started_at: null, finished_at: null, wall_time_s: null,
    progress: { current_step: 1, total_steps: 2, percent: 50, eta_seconds: null }, config: { params: {} }, base_run_id: null,
    reward_accuracy: null, generation_eval: tuned && { rows_requested: 10, base: null, tuned: { ...tuned, rows: 10 } }, ...fields,
  } as Run;
}

const runs = [
  run(1, "succeeded", {}, { rouge_l: 0.42, exact_match: 0.25, bleu: 17.5 }),
  run(2, "succeeded", { base_run_id: 1, reward_accuracy: 0.8 }, { rouge_l: 0.3, exact_match: 0.5, bleu: 9 }),
  run(3, "succeeded", { base_run_id: 2, reward_accuracy: 0.6 }),
  // Still training: higher figures than any finished run, and no result to crown.
  run(4, "running", { base_run_id: 2, reward_accuracy: 0.99 }, { rouge_l: 0.9, exact_match: 0.9, bleu: 90 }),
];

const columns: ColumnId[] = ["base_run_id", "rouge_l", "exact_match", "bleu", "reward_accuracy"];

function renderTable(shown: Run[] = runs, view: RunsView = { ...DEFAULT_VIEW, columns }) {
  renderInApp(
    <RunsTable
      runs={shown}
      datasetNames={new Map()}
      columns={view.columns ?? columns}
      view={view}
      onSort={() => {}}
      selected={new Set()}
      maxSelected={20}
      onSelect={() => {}}
      canChange={false}
      onCancel={() => {}}
      cancelingIds={new Set()}
      onClone={() => {}}
    />,
  );
}

const cell = (runId: number, column: ColumnId) =>
  screen.getAllByTestId("run-row").find((row) => row.dataset.runId === String(runId))!.querySelector(`td[data-column="${column}"]`) as HTMLElement;

describe("RunsTable lineage and score columns", () => {
  it("links the run each started from, and leaves the cell empty for a run of its own", () => {
    renderTable();
    expect(within(cell(2, "base_run_id")).getByRole("link", { name: "#1" })).toHaveAttribute("href", "/runs/1");
    expect(within(cell(4, "base_run_id")).getByRole("link", { name: "#2" })).toHaveAttribute("href", "/runs/2");
    expect(cell(1, "base_run_id")).toBeEmptyDOMElement();
  });

  it("shows the scores as the run page does and marks the highest of the finished runs", () => {
    renderTable();
    expect([cell(1, "rouge_l"), cell(1, "exact_match"), cell(1, "bleu"), cell(2, "reward_accuracy")].map((c) => c.textContent)).toEqual([
      "0.420", "25.0 %", "17.5", "80.0 %",
    ]);
    expect(cell(3, "rouge_l")).toHaveTextContent("—");
    const best = columns.slice(1).map((column) => runs.find((r) => cell(r.id, column).classList.contains("best"))?.id);
    expect(best).toEqual([1, 2, 1, 2]);
    expect(cell(4, "bleu")).not.toHaveClass("best");
  });

  it("gives the new columns headers without sorting", () => {
    renderTable();
    for (const label of ["From run", "ROUGE-L", "Exact match", "BLEU", "Reward acc."]) {
      const header = screen.getByRole("columnheader", { name: label });
      expect(within(header).queryByRole("button")).not.toBeInTheDocument();
    }
    expect(within(screen.getByRole("columnheader", { name: /Name/ })).getByRole("button")).toBeInTheDocument();
    // Aligned as its cells: a run link, not a figure.
    expect(screen.getByRole("columnheader", { name: "From run" })).not.toHaveClass("num");
    expect(screen.getByRole("columnheader", { name: "BLEU" })).toHaveClass("num");
  });
});

function logged(values: Record<string, { last: number; min: number; max: number; last_step?: number }>): Pick<Run, "metric_columns"> {
  return { metric_columns: Object.fromEntries(Object.entries(values).map(([key, v]) => [key, { last_step: 100, ...v }])) };
}

describe("RunsTable logged-metric columns", () => {
  const metricColumns: ColumnId[] = ["last(eval/loss)", "min(eval/loss)", "max(train/grad_norm)"];
  const metricRuns = [
    run(1, "succeeded", logged({ "eval/loss": { last: 1.25, min: 1.2, max: 3, last_step: 120 }, "train/grad_norm": { last: 1, min: 0.5, max: 9 } })),
    run(2, "succeeded", logged({ "eval/loss": { last: 1.5, min: 1.1, max: 2.5 }, "train/grad_norm": { last: 1, min: 0.5, max: 4 } })),
    // Not logged: an empty cell, not a zero.
    run(3, "succeeded"),
    run(4, "running", logged({ "eval/loss": { last: 0.5, min: 0.5, max: 2 } })),
  ];

  it("heads each with its key and aggregate, shows the figure or —, and says the step of the latest value", () => {
    renderTable(metricRuns, { ...DEFAULT_VIEW, columns: metricColumns });
    const header = screen.getByRole("columnheader", { name: "eval/loss min" });
    expect(header).toHaveAttribute("title", expect.stringMatching(/lowest value logged.*lower is better/));
    expect(screen.getByRole("columnheader", { name: "train/grad_norm max" })).not.toHaveAttribute("title", expect.stringMatching(/better/));
    expect(metricColumns.map((column) => cell(1, column).textContent)).toEqual(["1.25", "1.2", "9"]);
    expect(cell(1, "last(eval/loss)")).toHaveAttribute("title", expect.stringContaining("at step 120"));
    expect(metricColumns.map((column) => cell(3, column).textContent)).toEqual(["—", "—", "—"]);
  });

  it("marks the best of the succeeded runs where the metric's better end is known, and no other", () => {
    renderTable(metricRuns, { ...DEFAULT_VIEW, columns: metricColumns });
    // Lower loss is better; the running run's 0.5 is no result.
    expect(cell(1, "last(eval/loss)")).toHaveClass("best");
    expect(cell(2, "min(eval/loss)")).toHaveClass("best");
    expect(cell(4, "last(eval/loss)")).not.toHaveClass("best");
    expect(screen.getAllByTestId("run-row").some((row) => row.querySelector('td[data-column="max(train/grad_norm)"].best'))).toBe(false);
  });
});

describe("RunsTable grouped", () => {
  const grouped = [
    run(1, "succeeded", { method: "lora", best_eval_loss: 1.0, tags: ["a", "b"] }),
    run(2, "succeeded", { method: "lora", best_eval_loss: 1.2, tags: ["a"] }),
    // Still training: a loss far below the others, in no mean.
    run(3, "running", { method: "lora", best_eval_loss: 0.1, tags: [] }),
    run(4, "succeeded", { method: "ia3", best_eval_loss: 2.0, tags: ["b"] }),
    run(5, "failed", { method: "prefix", best_eval_loss: 0.5, tags: [] }),
  ];
  const view: RunsView = { ...DEFAULT_VIEW, columns: ["best_eval_loss"], group: "method" };
  const groupRow = (label: string) => screen.getAllByTestId("runs-group-row").find((row) => row.dataset.group === label)!;
  const groupCell = (label: string) => groupRow(label).querySelector('td[data-column="best_eval_loss"]') as HTMLElement;

  it("heads each group with its runs and the mean ± sample standard deviation over its succeeded runs only", () => {
    renderTable(grouped, view);
    expect(screen.getAllByTestId("runs-group-row").map((row) => row.dataset.group)).toEqual(["ia3", "lora", "prefix"]);
    expect(within(groupRow("lora")).getByRole("button")).toHaveTextContent("method: lora · 3 runs (2 succeeded)");
    // (1.0 + 1.2) / 2, sd √0.02: the running run's 0.1 is left out, and said to be.
    expect(groupCell("lora")).toHaveTextContent("1.1 ± 0.1414 (2 of 3)");
    // One succeeded run: its figure, no spread.
    expect(groupCell("ia3")).toHaveTextContent(/^2$/);
    expect(groupCell("prefix")).toHaveTextContent("—");
    expect(groupRow("lora").querySelector(".best")).toBeNull();
    const lora = screen.getAllByTestId("runs-group").find((group) => group.contains(groupRow("lora")))!;
    expect(within(lora).getAllByTestId("run-row").map((row) => row.dataset.runId)).toEqual(["1", "2", "3"]);
  });

  it("collapses a group to its header row", async () => {
    renderTable(grouped, view);
    const toggle = within(groupRow("lora")).getByRole("button");
    expect(toggle).toHaveAttribute("aria-expanded", "true");
    await userEvent.click(toggle);
    expect(toggle).toHaveAttribute("aria-expanded", "false");
    expect(screen.getAllByTestId("run-row").map((row) => row.dataset.runId)).toEqual(["4", "5"]);
    expect(groupCell("lora")).toHaveTextContent("1.1 ± 0.1414 (2 of 3)");
  });

  it("shows a param's value where the whole group shares it, and nothing where its runs differ", () => {
    const withParams = grouped.map((r) => ({ ...r, config: { params: { r: r.id === 2 ? 8 : 16, lr: 1e-4 } } }));
    renderTable(withParams, { ...view, columns: ["param.r", "param.lr"], group: "tag" });
    const params = (label: string) => ["param.r", "param.lr"].map((c) => groupRow(label).querySelector(`td[data-column="${c}"]`)?.textContent);
    expect(params("b")).toEqual(["16", "1.00e-4"]);
    expect(params("a")).toEqual(["", "1.00e-4"]);
    expect(groupRow("a").querySelector('td[data-column="param.r"]')).toHaveAttribute("title", "Differs between the group's runs");
  });

  it("lists a run under each of its tags, and a run without one under (none)", () => {
    renderTable(grouped, { ...view, group: "tag" });
    expect(screen.getAllByTestId("runs-group-row").map((row) => row.dataset.group)).toEqual(["a", "b", "(none)"]);
    expect(groupCell("b")).toHaveTextContent("1.5 ± 0.7071");
    expect(screen.getAllByTestId("run-row").filter((row) => row.dataset.runId === "1")).toHaveLength(2);
  });
});
