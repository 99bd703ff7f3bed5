// Words for the run page's summary figures that depend on where the run is.
import type { Run } from "../../api/client";
import type { Series } from "../../lib/series";

/** The API keeps `final_eval_loss` current at every eval: it is final only once the run has succeeded. */
export function evalLossLabel(status: Run["status"]): string {
  if (status === "succeeded") return "Final eval loss";
  if (status === "failed" || status === "canceled") return "Last eval loss";
  return "Latest eval loss";
}

/**
 * The throughput to show: while a run trains, the latest tokens/s its current attempt logged (a resumed run's
 * summary still holds an earlier attempt's figure, and so do its points up to the checkpoint it resumed from: only
 * points after the newest checkpoint are the attempt now training); once it has ended, its summary's.
 */
export function shownTokensPerSecond(
  run: Pick<Run, "status" | "attempt" | "checkpoint_step" | "tokens_per_second">,
  series: Series | undefined,
): number | null {
  if (run.status !== "running") return run.tokens_per_second ?? lastLogged(series, -1);
  return lastLogged(series, run.attempt > 1 ? (run.checkpoint_step ?? 0) : -1);
}

function lastLogged(series: Series | undefined, afterStep: number): number | null {
  if (!series) return null;
  for (let i = series.value.length - 1; i >= 0 && series.step[i] > afterStep; i--) {
    const value = series.value[i];
    if (value !== null && Number.isFinite(value)) return value;
  }
  return null;
}
