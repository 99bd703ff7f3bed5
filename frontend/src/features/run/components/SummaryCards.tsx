import type { ReactNode } from "react";

import type { Run } from "../../../api/client";
import { formatBytes, formatCount, formatDuration, formatNumber, formatPercent, runDuration } from "../../../lib/format";
import { perplexity } from "../../metrics/keys";

function Stat({ label, value, metric, title }: { label: string; value: ReactNode; metric: string; title?: string }) {
  return (
    <div className="stat" data-metric={metric} title={title}>
      <span className="value">{value}</span>
      <span className="label">{label}</span>
    </div>
  );
}

/** `liveTokensPerSecond`: the latest logged throughput, shown until the run's summary has its own. */
export function SummaryCards({ run, liveTokensPerSecond = null }: { run: Run; liveTokensPerSecond?: number | null }) {
  const wall = run.wall_time_s ?? runDuration(run.started_at, run.finished_at);
  return (
    <section className="card summary-cards" data-testid="run-summary">
      <Stat
        label="Trainable params"
        metric="trainable_params"
        value={
          <>
            {formatCount(run.trainable_params)}
            <small> {formatPercent(run.trainable_percent)}</small>
          </>
        }
      />
      <Stat label="Total params" metric="total_params" value={formatCount(run.total_params)} />
      <Stat
        label="Peak memory"
        metric="peak_memory_bytes"
        title="CUDA max allocated on a GPU; elsewhere the model state (weights + gradients + optimizer states)"
        value={formatBytes(run.peak_memory_bytes)}
      />
      <Stat label="Tokens / s" metric="tokens_per_second" value={formatNumber(run.tokens_per_second ?? liveTokensPerSecond, 4)} />
      <Stat label="Wall time" metric="wall_time_s" value={formatDuration(wall)} />
      <Stat label="Final eval loss" metric="final_eval_loss" value={formatNumber(run.final_eval_loss)} />
      <Stat label="Best eval loss" metric="best_eval_loss" value={formatNumber(run.best_eval_loss)} />
      <Stat
        label="Perplexity"
        metric="perplexity"
        title="exp(best eval loss)"
        value={formatNumber(perplexity(run.best_eval_loss))}
      />
    </section>
  );
}
