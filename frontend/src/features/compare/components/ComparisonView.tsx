// Several runs side by side: charts, cost and config. The compare page and a shared comparison show the same
// view; a shared one is read-only (no editing the selection, no links into the app).
import { useQuery } from "@tanstack/react-query";
import { useMemo, type ReactNode } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { EmptyState, ErrorBox, Loading, StatusBadge } from "../../../components/ui/ui";
import { runColor } from "../../../lib/series";
import { ComparedMetricCharts, seriesByKey, useComparedMetrics, type RunSeriesSet } from "../../metrics";
import { isFinished, runsQueryOptions } from "../../runs";
import { FairCostTable } from "../../studies";
import { MAX_COMPARE_RUNS } from "../selection";
import { ConfigTable } from "./ConfigTable";
import { CostTable } from "./CostTable";

const MAX_POINTS = 1000;
const LIVE_REFRESH_MS = 5_000;
const CHARTS_DRAWN = { mark: "tunelab:charts-drawn", measure: "tunelab:metrics-to-charts" };

export type ComparisonViewProps = {
  ids: number[];
  /** Remove a run from the selection; absent when read-only. */
  onChangeIds?: (ids: number[]) => void;
  readOnly?: boolean;
  /** Buttons for the runs shown (share…). */
  actions?: (runs: Run[]) => ReactNode;
};

export function ComparisonView({ ids, onChangeIds, readOnly = false, actions }: ComparisonViewProps) {
  const runsQuery = useQuery(runsQueryOptions({ ids, limit: Math.max(MAX_COMPARE_RUNS, ids.length) }));
  const runs = useMemo(() => {
    const byId = new Map((runsQuery.data?.data ?? []).map((run) => [run.id, run]));
    return ids.map((id) => byId.get(id)).filter((run): run is Run => run !== undefined);
  }, [ids, runsQuery.data]);
  const unknown = runsQuery.data ? ids.filter((id) => !runs.some((run) => run.id === id)) : [];
  const knownIds = useMemo(() => runs.map((run) => run.id), [runs]);
  const anyActive = runs.some((run) => !isFinished(run));
  const metrics = useComparedMetrics(runs, MAX_POINTS, anyActive ? LIVE_REFRESH_MS : false);

  // Runs' live fields (status, progress) do not change the series: the sets depend on the ids and names only.
  const runLabels = runs.map((r) => `${r.id}:${r.name}`).join(",");
  const sets = useMemo<RunSeriesSet[]>(() => {
    const byRun = new Map((metrics.data?.data ?? []).map((m) => [m.run_id, m]));
    return runs.flatMap((run) => {
      const m = byRun.get(run.id);
      return m ? [{ runId: run.id, label: run.name, color: runColor(run.id), series: seriesByKey(m.series) }] : [];
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- runLabels stands for runs (see above)
  }, [metrics.data, runLabels]);

  if (runsQuery.isPending) return <Loading what="runs" />;
  if (runsQuery.error) return <ErrorBox error={runsQuery.error} />;

  return (
    <>
      {unknown.length > 0 && (
        <div className="error-box" role="alert" data-testid="compare-message">
          Unknown run{unknown.length > 1 ? "s" : ""}: {unknown.map((id) => `#${id}`).join(", ")}
        </div>
      )}
      {runs.length === 0 ? (
        <EmptyState title="None of these runs exist">{!readOnly && <Link to="/">Back to the runs</Link>}</EmptyState>
      ) : (
        <>
          <section className="card compare-runs" data-testid="compare-runs">
            {runs.map((run) => (
              <span className="compare-chip" key={run.id} data-run-id={run.id}>
                <i className="chart-swatch" style={{ background: runColor(run.id) }} />
                {readOnly ? <span>{run.name}</span> : <Link to={`/runs/${run.id}`}>{run.name}</Link>}
                <StatusBadge status={run.status} />
                {!readOnly && onChangeIds && (
                  <button
                    className="chip-remove"
                    aria-label={`Remove ${run.name} from the comparison`}
                    title="Remove from the comparison"
                    onClick={() => onChangeIds(ids.filter((id) => id !== run.id))}
                  >
                    ×
                  </button>
                )}
              </span>
            ))}
            {actions && <span className="compare-actions">{actions(runs)}</span>}
          </section>
          <ComparedMetricCharts
            sets={sets}
            metrics={metrics}
            status={
              <>
                {metrics.isPending && <span className="help">Loading metrics…</span>}
                {anyActive && <span className="help live-dot">Live · every {LIVE_REFRESH_MS / 1000} s</span>}
              </>
            }
            emptyTitle="These runs have logged no metrics yet"
            drawnNames={CHARTS_DRAWN}
          />
          <CostTable runs={runs} linkRuns={!readOnly} />
          <FairCostTable runIds={knownIds} refetchMs={anyActive ? LIVE_REFRESH_MS : false} />
          <ConfigTable runs={runs} />
        </>
      )}
    </>
  );
}
