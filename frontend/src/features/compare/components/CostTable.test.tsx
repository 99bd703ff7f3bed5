// @vitest-environment jsdom
// The per-run cost table shows each run as measured and crowns nothing: two single runs' process memory or speed
// differ by noise (the 571.3 vs 575.8 MiB), which only the fair cost table, over seeds, can rank.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { renderInApp } from "../../../test/render";
import { CostTable } from "./CostTable";

function run(id: number, name: string, figures: Partial<Run>): Run {
  return {
    id, name, method: "lora", project_id: 1, trainable_params: 1000, trainable_percent: 1.5, peak_memory_bytes: null,
    tokens_per_second: null, wall_time_s: null, started_at: null, finished_at: null, final_eval_loss: null,
    best_eval_loss: null, best_eval_perplexity: null, ...figures,
  } as Run;
}

describe("CostTable", () => {
  it("shows every run's figures and marks no best", () => {
    renderInApp(
      <CostTable
        linkRuns={false}
        runs={[
          run(1, "a", { peak_memory_bytes: Math.round(571.3 * 2 ** 20), tokens_per_second: 1000, best_eval_loss: 1.2 }),
          run(2, "b", { peak_memory_bytes: Math.round(575.8 * 2 ** 20), tokens_per_second: 1010, best_eval_loss: 1.3 }),
        ]}
      />,
    );
    const table = screen.getByTestId("cost-table");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows).toHaveLength(2);
    expect(within(rows[0]).getByText("a")).toBeInTheDocument();
    expect(rows[0].querySelector('[data-metric="peak_memory_bytes"]')?.textContent).toMatch(/571/);
    expect(rows[1].querySelector('[data-metric="best_eval_loss"]')?.textContent).toMatch(/1\.3/);
    expect(table.querySelectorAll(".best")).toHaveLength(0);
    expect(screen.getByText(/fair cost table below/)).toBeInTheDocument();
  });

  it("has no generation or reward columns when no run measured them", () => {
    renderInApp(<CostTable linkRuns={false} runs={[run(1, "a", {}), run(2, "b", { generation_eval: null, reward_accuracy: null })]} />);
    const table = screen.getByTestId("cost-table");
    for (const metric of ["rouge_l", "exact_match", "bleu", "reward_accuracy"]) {
      expect(table.querySelector(`[data-metric="${metric}"]`)).toBeNull();
    }
    expect(within(table).queryByText("ROUGE-L")).toBeNull();
  });

  it("shows the tuned model's generation scores in their units, and a preference run's reward accuracy", () => {
    const scores = (rouge_l: number, exact_match: number, bleu: number) => ({ rouge_l, exact_match, bleu, rows: 16 });
    renderInApp(
      <CostTable
        linkRuns={false}
        runs={[
          run(1, "sft", { generation_eval: { rows_requested: 16, tuned: scores(0.8123, 0.625, 41.27), base: scores(0.5, 0.1, 10) } }),
          run(2, "dpo", { reward_accuracy: 0.75 }),
          run(3, "plain", {}),
        ]}
      />,
    );
    const table = screen.getByTestId("cost-table");
    expect(within(table).getByRole("columnheader", { name: "ROUGE-L" })).toBeInTheDocument();
    const [sft, dpo, plain] = within(table).getAllByRole("row").slice(1);
    expect(sft.querySelector('[data-metric="rouge_l"]')).toHaveTextContent("0.812");
    expect(sft.querySelector('[data-metric="exact_match"]')).toHaveTextContent("62.5 %");
    expect(sft.querySelector('[data-metric="bleu"]')).toHaveTextContent("41.3");
    expect(sft.querySelector('[data-metric="reward_accuracy"]')).toHaveTextContent("—");
    expect(dpo.querySelector('[data-metric="reward_accuracy"]')).toHaveTextContent("75.0 %");
    expect(dpo.querySelector('[data-metric="rouge_l"]')).toHaveTextContent("—");
    expect(plain.querySelector('[data-metric="bleu"]')).toHaveTextContent("—");
  });
});
