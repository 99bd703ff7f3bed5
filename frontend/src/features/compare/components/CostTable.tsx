import type { ReactNode } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { formatBytes, formatCount, formatDuration, formatNumber, formatPercent, runDuration } from "../../../lib/format";
import { runColor } from "../../../lib/series";
import { bestIndexes } from "../best";

type Column = {
  metric: string;
  label: string;
  value: (run: Run) => number | null;
  format: (value: number | null) => ReactNode;
  better: "low" | "high";
};

const COLUMNS: Column[] = [
  { metric: "trainable_params", label: "Trainable params", value: (r) => r.trainable_params, format: formatCount, better: "low" },
  { metric: "trainable_percent", label: "Trainable %", value: (r) => r.trainable_percent, format: formatPercent, better: "low" },
  { metric: "peak_memory_bytes", label: "Peak memory", value: (r) => r.peak_memory_bytes, format: formatBytes, better: "low" },
  { metric: "tokens_per_second", label: "Tokens / s", value: (r) => r.tokens_per_second, format: (v) => formatNumber(v, 4), better: "high" },
  {
    metric: "wall_time_s",
    label: "Wall time",
    value: (r) => r.wall_time_s ?? runDuration(r.started_at, r.finished_at),
    format: formatDuration,
    better: "low",
  },
  { metric: "final_eval_loss", label: "Final eval loss", value: (r) => r.final_eval_loss, format: (v) => formatNumber(v), better: "low" },
  { metric: "best_eval_loss", label: "Best eval loss", value: (r) => r.best_eval_loss, format: (v) => formatNumber(v), better: "low" },
  { metric: "perplexity", label: "Perplexity", value: (r) => r.best_eval_perplexity ?? null, format: (v) => formatNumber(v), better: "low" },
];

/** What each method cost and bought, the best of each column marked. */
export function CostTable({ runs, linkRuns = true }: { runs: readonly Run[]; linkRuns?: boolean }) {
  const best = COLUMNS.map((c) => bestIndexes(runs.map(c.value), c.better));
  return (
    <section className="card">
      <header className="card-header">
        <h2>Method cost</h2>
        <span className="help">best of each column in green · perplexity = exp(best eval loss)</span>
      </header>
      <div className="table-scroll">
        <table data-testid="cost-table" className="compare-table">
          <thead>
            <tr>
              <th>Run</th>
              <th>Method</th>
              {COLUMNS.map((c) => (
                <th key={c.metric} className="num">
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {runs.map((run, i) => (
              <tr key={run.id} data-run-id={run.id}>
                <td>
                  <i className="chart-swatch" style={{ background: runColor(run.id) }} />
                  {linkRuns ? <Link to={`/runs/${run.id}`}>{run.name}</Link> : run.name}
                </td>
                <td data-metric="method">{run.method}</td>
                {COLUMNS.map((c, j) => (
                  <td key={c.metric} data-metric={c.metric} className={best[j].has(i) ? "num best" : "num"}>
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
