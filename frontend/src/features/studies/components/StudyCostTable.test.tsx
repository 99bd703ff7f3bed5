// @vitest-environment jsdom
// The fair cost table with generation columns: which way each column is better, the scores in their units, and the
// base model's row first, the one every cell's gain is read against, never crowned.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { renderInApp } from "../../../test/render";
import type { CostTable } from "../api/queries";
import { StudyCostTable } from "./StudyCostTable";

const value = (mean: number, spread = 0, n = 1) => ({ mean, spread, n });

function table(baseline: CostTable["baseline"]): CostTable {
  return {
    columns: [
      { key: "trainable_percent", label: "Trainable params", unit: "%", better: "lower", ranked: true },
      { key: "generation_rouge_l", label: "ROUGE-L (generated answers)", unit: "", better: "higher", ranked: true },
      { key: "generation_exact_match", label: "Exact match (generated answers)", unit: "fraction", better: "higher", ranked: true },
      { key: "generation_bleu", label: "BLEU (generated answers)", unit: "", better: "higher", ranked: true },
      {
        key: "reward_accuracy", label: "Reward accuracy (eval pairs)", unit: "fraction", better: "higher", ranked: false,
        not_ranked_reason: "not ranked: runs use different eval splits: …",
      },
    ],
    rows: [
      {
        cell: "lora", method: "lora", grid: {}, run_ids: [1, 2], finished_run_ids: [1, 2], unfinished: [], best: ["generation_rouge_l"],
        values: {
          trainable_percent: value(1.5),
          generation_rouge_l: value(0.8123, 0.0213, 2),
          generation_exact_match: value(0.625, 0.03, 2),
          generation_bleu: value(41.27),
          reward_accuracy: value(0.75),
        },
      },
      {
        cell: "ia3", method: "ia3", grid: {}, run_ids: [3], finished_run_ids: [3], unfinished: [], best: [],
        values: { trainable_percent: value(0.1), generation_rouge_l: value(0.6), generation_exact_match: value(0.25), generation_bleu: value(20), reward_accuracy: null },
      },
    ],
    target_loss: null,
    notes: [],
    baseline,
  };
}

const BASELINE = {
  label: "base model tunelab-tiny (no training)",
  values: { generation_rouge_l: 0.4567, generation_exact_match: 0.125, generation_bleu: 12.04 },
};

const cellText = (row: HTMLElement, column: number) => row.querySelectorAll("td")[column + 1]?.textContent;

describe("StudyCostTable", () => {
  it("says per column whether lower or higher is better, unless it is not ranked", () => {
    renderInApp(<StudyCostTable table={table(null)} />);
    expect(screen.getByRole("columnheader", { name: "Trainable params" })).toHaveAttribute("title", "lower is better");
    expect(screen.getByRole("columnheader", { name: "ROUGE-L (generated answers)" })).toHaveAttribute("title", "higher is better");
    expect(screen.getByRole("columnheader", { name: "Exact match (generated answers)" })).toHaveAttribute("title", "higher is better");
    expect(screen.getByRole("columnheader", { name: /Reward accuracy/ })).toHaveAttribute("title", "not ranked: runs use different eval splits: …");
  });

  it("shows generation scores in their units: ROUGE-L 0–1, exact match and reward accuracy as %, BLEU 0–100", () => {
    renderInApp(<StudyCostTable table={table(null)} />);
    const [lora, ia3] = within(screen.getByTestId("study-cost-table")).getAllByRole("row").slice(1);
    expect(cellText(lora, 0)).toBe("1.5 %");
    expect(cellText(lora, 1)).toBe("0.812 ± 0.021 best");
    expect(cellText(lora, 2)).toBe("62.5 % ± 3.0 %");
    expect(cellText(lora, 3)).toBe("41.3");
    expect(cellText(lora, 4)).toBe("75.0 %");
    expect(cellText(ia3, 1)).toBe("0.600");
    expect(cellText(ia3, 4)).toBe("—");
  });

  it("shows the base model's scores as the first row, with — where it has none, and never marks it best", () => {
    renderInApp(<StudyCostTable table={table(BASELINE)} />);
    const rows = within(screen.getByTestId("study-cost-table")).getAllByRole("row").slice(1);
    expect(rows).toHaveLength(3);
    const [baseline, lora] = rows;
    expect(baseline).toBe(screen.getByTestId("baseline-row"));
    expect(baseline).toHaveClass("baseline-row");
    expect(within(baseline).getByRole("rowheader")).toHaveTextContent("base model tunelab-tiny (no training)");
    expect(cellText(baseline, -1)).toBe("—");
    expect(cellText(baseline, 0)).toBe("—");
    expect(cellText(baseline, 1)).toBe("0.457");
    expect(cellText(baseline, 2)).toBe("12.5 %");
    expect(cellText(baseline, 3)).toBe("12.0");
    expect(cellText(baseline, 4)).toBe("—");
    expect(baseline.querySelector("[data-best], .best")).toBeNull();
    expect(lora).toHaveAttribute("data-cell", "lora");
  });

  it("has no baseline row when the server sends none", () => {
    renderInApp(<StudyCostTable table={table(null)} />);
    expect(screen.queryByTestId("baseline-row")).toBeNull();
    expect(within(screen.getByTestId("study-cost-table")).getAllByRole("row")[1]).toHaveAttribute("data-cell", "lora");
  });
});
