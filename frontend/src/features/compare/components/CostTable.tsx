import { useId, type ReactNode } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { formatBytes, formatCount, formatDuration, formatNumber, formatPercent, runDuration } from "../../../lib/format";
import { runColor } from "../../../lib/series";

type Column = {
  metric: string;
  label: string;
  value: (run: Run) => number | null;
  format: (value: number | null) => ReactNode;
  /** Measured only by some runs (evaluation by generation, preference objectives): hidden when no run has it. */
  optional?: boolean;
  title?: string;
};

const fixed = (digits: number) => (value: number | null) => (value === null ? "—" : value.toFixed(digits));
const fractionAsPercent = (value: number | null) => (value === null ? "—" : `${(value * 100).toFixed(1)} %`);

const COLUMNS: Column[] = [
  { metric: "trainable_params", label: "Trainable params", value: (r) => r.trainable_params, format: formatCount },
  { metric: "trainable_percent", label: "Trainable %", value: (r) => r.trainable_percent, format: formatPercent },
  { metric: "peak_memory_bytes", label: "Peak memory", value: (r) => r.peak_memory_bytes, format: formatBytes },
  { metric: "tokens_per_second", label: "Tokens / s", value: (r) => r.tokens_per_second, format: (v) => formatNumber(v, 4) },
  {
    metric: "wall_time_s",
    label: "Wall time",
    value: (r) => r.wall_time_s ?? runDuration(r.started_at, r.finished_at),
    format: formatDuration,
  },
  { metric: "final_eval_loss", label: "Final eval loss", value: (r) => r.final_eval_loss, format: (v) => formatNumber(v) },
  { metric: "best_eval_loss", label: "Best eval loss", value: (r) => r.best_eval_loss, format: (v) => formatNumber(v) },
  { metric: "perplexity", label: "Perplexity", value: (r) => r.best_eval_perplexity ?? null, format: (v) => formatNumber(v) },
  {
    metric: "rouge_l",
    label: "ROUGE-L",
    title: "Mean ROUGE-L F1 of the tuned model's generated answers, 0–1",
    value: (r) => r.generation_eval?.tuned?.rouge_l ?? null,
    format: fixed(3),
    optional: true,
  },
  {
    metric: "exact_match",
    label: "Exact match",
    title: "Generated answers equal to the expected ones (case and whitespace aside)",
    value: (r) => r.generation_eval?.tuned?.exact_match ?? null,
    format: fractionAsPercent,
    optional: true,
  },
  {
    metric: "bleu",
    label: "BLEU",
    title: "Corpus BLEU of the tuned model's generated answers, 0–100",
    value: (r) => r.generation_eval?.tuned?.bleu ?? null,
    format: fixed(1),
    optional: true,
  },
  {
    metric: "reward_accuracy",
    label: "Reward accuracy",
    title: "Preference objectives: eval pairs whose chosen answer the policy rewards above the rejected one",
    value: (r) => r.reward_accuracy ?? null,
    format: fractionAsPercent,
    optional: true,
  },
];

/**
 * What each run cost and bought, as measured. Nothing is marked best here: one run's figures do not tell noise from a
 * difference; the fair cost table (per method, over seeds, on the server) does.
 */
export function CostTable({ runs, linkRuns = true }: { runs: readonly Run[]; linkRuns?: boolean }) {
  const columns = COLUMNS.filter((c) => !c.optional || runs.some((run) => c.value(run) !== null));
  const titleId = useId();
  return (
    <section className="card" aria-labelledby={titleId}>
      <header className="card-header">
        <h2 id={titleId}>Method cost</h2>
        <span className="help">each run as measured · perplexity = exp(best eval loss) · what is best beyond the noise: the fair cost table below</span>
      </header>
      <div className="table-scroll">
        <table data-testid="cost-table" className="compare-table" aria-labelledby={titleId}>
          <thead>
            <tr>
              <th>Run</th>
              <th>Method</th>
              {columns.map((c) => (
                <th key={c.metric} className="num" title={c.title}>
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.id} data-run-id={run.id}>
                <td>
                  <i className="chart-swatch" style={{ background: runColor(run.id) }} />
                  {linkRuns ? <Link to={`/runs/${run.id}`}>{run.name}</Link> : run.name}
                </td>
                <td data-metric="method">{run.method}</td>
                {columns.map((c) => (
                  <td key={c.metric} data-metric={c.metric} className="num">
                    {c.format(c.value(run))}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
