import { useQuery } from "@tanstack/react-query";
import { useMemo, useRef, useState, type FormEvent } from "react";
import { Link, useSearchParams } from "react-router";

import type { Run } from "../api/client";
import { EmptyState, ErrorBox, Loading, StatusBadge } from "../components/ui/ui";
import { ConfigTable } from "../features/compare/components/ConfigTable";
import { CostTable } from "../features/compare/components/CostTable";
import { MAX_COMPARE_RUNS, formatSelection, parseSelection } from "../features/compare/selection";
import { metricsQueryOptions } from "../features/metrics/api/queries";
import { seriesByKey, type RunSeriesSet } from "../features/metrics/chartData";
import { ChartControls } from "../features/metrics/components/ChartControls";
import { MetricChartCard } from "../features/metrics/components/MetricChartCard";
import { useChartControls, useSearchUpdater } from "../features/metrics/controls";
import { AXIS_KEYS, sortMetricKeys } from "../features/metrics/keys";
import { isFinished, runsQueryOptions } from "../features/runs/api/queries";
import { runColor } from "../lib/series";

const MAX_POINTS = 1000;
const LIVE_REFRESH_MS = 5_000;

export function ComparePage() {
  const [params] = useSearchParams();
  const updateSearch = useSearchUpdater();
  const raw = params.get("runs");
  const selection = parseSelection(raw);

  const setIds = (ids: number[]) =>
    updateSearch((next) => {
      if (ids.length) next.set("runs", formatSelection(ids));
      else next.delete("runs");
    });

  return (
    <div className="compare-page" data-testid="compare-page">
      <div className="page-title">
        <h1>Compare runs</h1>
        <RunPicker value={raw ?? ""} onApply={(ids) => setIds(ids)} />
      </div>
      {selection.kind === "none" && (
        <EmptyState title="No runs selected">
          <p>
            Pick runs on the <Link to="/">runs list</Link>, or type their ids above (up to {MAX_COMPARE_RUNS}).
          </p>
        </EmptyState>
      )}
      {selection.kind === "invalid" && (
        <div className="error-box" role="alert" data-testid="compare-message">
          Not run ids: {selection.tokens.join(", ")}. Use ?runs=1,2,3.
        </div>
      )}
      {selection.kind === "too-many" && (
        <div className="error-box" role="alert" data-testid="compare-message">
          {selection.count} runs selected; compare at most {MAX_COMPARE_RUNS} at once.
        </div>
      )}
      {selection.kind === "ok" && <Comparison ids={selection.ids} onChangeIds={setIds} />}
    </div>
  );
}

function RunPicker({ value, onApply }: { value: string; onApply: (ids: number[]) => void }) {
  const [text, setText] = useState(value);
  const [lastValue, setLastValue] = useState(value);
  if (value !== lastValue) {
    setLastValue(value);
    setText(value);
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = parseSelection(text);
    if (parsed.kind === "ok") onApply(parsed.ids);
    else if (parsed.kind === "none") onApply([]);
  };
  return (
    <form className="toolbar run-picker" onSubmit={submit}>
      <input
        aria-label="Run ids"
        placeholder="Run ids, e.g. 1,2,3"
        value={text}
        onChange={(e) => setText(e.target.value)}
        data-testid="compare-ids"
      />
      <button type="submit">Compare</button>
    </form>
  );
}

function Comparison({ ids, onChangeIds }: { ids: number[]; onChangeIds: (ids: number[]) => void }) {
  const runsQuery = useQuery(runsQueryOptions({ ids, limit: MAX_COMPARE_RUNS }));
  const runs = useMemo(() => {
    const byId = new Map((runsQuery.data?.data ?? []).map((run) => [run.id, run]));
    return ids.map((id) => byId.get(id)).filter((run): run is Run => run !== undefined);
  }, [ids, runsQuery.data]);
  const unknown = runsQuery.data ? ids.filter((id) => !runs.some((run) => run.id === id)) : [];
  const knownIds = useMemo(() => runs.map((run) => run.id), [runs]);
  const anyActive = runs.some((run) => !isFinished(run));
  const metrics = useQuery(metricsQueryOptions(knownIds, MAX_POINTS, anyActive ? LIVE_REFRESH_MS : false));
  const [controls, setControls] = useChartControls();

  // Runs' live fields (status, progress) do not change the series: the sets depend on the ids and names only.
  const runLabels = runs.map((r) => `${r.id}:${r.name}`).join(",");
  const sets = useMemo<RunSeriesSet[]>(() => {
    const byRun = new Map((metrics.data?.data ?? []).map((m) => [m.run_id, m]));
    return runs.flatMap((run) => {
      const m = byRun.get(run.id);
      return m ? [{ runId: run.id, label: run.name, color: runColor(run.id), series: seriesByKey(m.series) }] : [];
    });
  }, [metrics.data, runLabels]);

  const keys = useMemo(
    () => sortMetricKeys(sets.flatMap((s) => Object.keys(s.series))).filter((key) => !AXIS_KEYS.has(key)),
    [sets],
  );
  const onChartDraw = useChartsDrawnMark(metrics.dataUpdatedAt, keys);

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
        <EmptyState title="None of these runs exist">
          <Link to="/">Back to the runs</Link>
        </EmptyState>
      ) : (
        <>
          <section className="card compare-runs" data-testid="compare-runs">
            {runs.map((run) => (
              <span className="compare-chip" key={run.id} data-run-id={run.id}>
                <i className="chart-swatch" style={{ background: runColor(run.id) }} />
                <Link to={`/runs/${run.id}`}>{run.name}</Link>
                <StatusBadge status={run.status} />
                <button
                  className="chip-remove"
                  aria-label={`Remove ${run.name} from the comparison`}
                  title="Remove from the comparison"
                  onClick={() => onChangeIds(ids.filter((id) => id !== run.id))}
                >
                  ×
                </button>
              </span>
            ))}
          </section>
          <section className="card charts-toolbar">
            <ChartControls value={controls} onChange={setControls} />
            {metrics.isPending && <span className="help">Loading metrics…</span>}
            {anyActive && <span className="help live-dot">Live · every {LIVE_REFRESH_MS / 1000} s</span>}
          </section>
          {metrics.error && <ErrorBox error={metrics.error} />}
          {metrics.data && keys.length === 0 && <EmptyState title="These runs have logged no metrics yet" />}
          <div className="chart-grid">
            {keys.map((key) => (
              <MetricChartCard key={key} metricKey={key} runs={sets} controls={controls} onDraw={() => onChartDraw(key)} />
            ))}
          </div>
          <CostTable runs={runs} />
          <ConfigTable runs={runs} />
        </>
      )}
    </>
  );
}

/**
 * Mark "tunelab:charts-drawn" when every chart has drawn the data of the latest metrics response, and measure it
 * from "tunelab:metrics-received" (set when the response arrived): scripts/bench_ui.py reads the measure.
 */
function useChartsDrawnMark(dataUpdatedAt: number, keys: readonly string[]) {
  const tracked = useRef<{ version: number; waiting: Set<string> }>({ version: 0, waiting: new Set() });
  // Set during render, so it is in place before any chart of this render draws.
  if (dataUpdatedAt && tracked.current.version !== dataUpdatedAt && keys.length > 0) {
    tracked.current = { version: dataUpdatedAt, waiting: new Set(keys) };
  }
  return (key: string) => {
    const { waiting } = tracked.current;
    if (waiting.size === 0 || !waiting.delete(key) || waiting.size > 0) return;
    performance.clearMarks("tunelab:charts-drawn");
    performance.clearMeasures("tunelab:metrics-to-charts");
    performance.mark("tunelab:charts-drawn");
    if (performance.getEntriesByName("tunelab:metrics-received", "mark").length) {
      performance.measure("tunelab:metrics-to-charts", "tunelab:metrics-received", "tunelab:charts-drawn");
    }
  };
}
