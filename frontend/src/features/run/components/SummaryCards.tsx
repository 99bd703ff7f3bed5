import type { ReactNode } from "react";

import type { Run } from "../../../api/client";
import { formatBytes, formatCount, formatDuration, formatNumber, formatPercent, runDuration } from "../../../lib/format";
import { evalLossLabel } from "../summary";

function Stat({ label, value, metric, title }: { label: string; value: ReactNode; metric: string; title?: string }) {
  return (
    <div className="stat" data-metric={metric} title={title}>
      <span className="value">{value}</span>
      <span className="label">{label}</span>
    </div>
  );
}

/** `tokensPerSecond`: the throughput to show (shownTokensPerSecond: the current attempt's while the run trains). */
export function SummaryCards({ run, tokensPerSecond = null }: { run: Run; tokensPerSecond?: number | null }) {
  const wall = run.wall_time_s ?? runDuration(run.started_at, run.finished_at);
  return (
    <section className="card summary-cards" aria-label="Summary">
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
        title={memoryTitle(run)}
        value={formatBytes(run.peak_memory_bytes)}
      />
      <Stat label="Tokens / s" metric="tokens_per_second" value={formatNumber(tokensPerSecond ?? (run.status === "running" ? null : run.tokens_per_second), 4)} />
      <Stat label="Wall time" metric="wall_time_s" value={formatDuration(wall)} />
      <Stat label={evalLossLabel(run.status)} metric="final_eval_loss" value={formatNumber(run.final_eval_loss)} />
      <Stat label="Best eval loss" metric="best_eval_loss" value={formatNumber(run.best_eval_loss)} />
      {run.best_eval_perplexity !== null && run.best_eval_perplexity !== undefined && (
        <Stat label="Perplexity" metric="perplexity" title="exp(best eval loss)" value={formatNumber(run.best_eval_perplexity)} />
      )}
      {run.truncation && (
        <Stat
          label="Truncated rows"
          metric="truncated_rows"
          title={`Rows longer than max_length (${String(run.config.params && (run.config.params as { max_length?: number }).max_length)} tokens) lose their tail: ${formatCount(run.truncation.truncated_tokens)} tokens training never saw`}
          value={
            <>
              {formatCount(run.truncation.truncated_rows)}
              <small> of {formatCount(run.truncation.rows)}</small>
            </>
          }
        />
      )}
    </section>
  );
}

/** The breakdown behind "Peak memory": the model state by part, and the CUDA and process peaks apart. */
export function memoryTitle(run: Run): string {
  const lines = ["CUDA max allocated on a GPU; elsewhere the model state (weights + gradients + optimizer states)"];
  const memory = run.memory;
  if (memory) {
    if (memory.model_state_bytes != null) {
      lines.push(
        `Model state ${formatBytes(memory.model_state_bytes)}: weights ${formatBytes(memory.weights_bytes)}, ` +
          `gradients ${formatBytes(memory.gradients_bytes)}, optimizer states ${formatBytes(memory.optimizer_states_bytes)}`,
      );
    }
    if (memory.cuda_peak_bytes != null) lines.push(`CUDA max allocated ${formatBytes(memory.cuda_peak_bytes)}`);
    if (memory.process_peak_rss_bytes != null) lines.push(`Process peak RSS ${formatBytes(memory.process_peak_rss_bytes)}`);
  }
  return lines.join("\n");
}
