import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useMemo, useRef } from "react";
import { Link, useParams } from "react-router";

import { ApiError, type Run } from "../api/client";
import { EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { runMetricsQueryOptions } from "../features/metrics/api/queries";
import type { RunSeriesSet } from "../features/metrics/chartData";
import { ChartControls } from "../features/metrics/components/ChartControls";
import { MetricChartCard } from "../features/metrics/components/MetricChartCard";
import { useChartControls } from "../features/metrics/controls";
import { AXIS_KEYS, RUN_CHART_KEYS, sortMetricKeys } from "../features/metrics/keys";
import { useLiveRunSeries } from "../features/metrics/live";
import { artifactKeys } from "../features/run/api/queries";
import { ArtifactsCard } from "../features/run/components/ArtifactsCard";
import { ConfigCard } from "../features/run/components/ConfigCard";
import { LogTail } from "../features/run/components/LogTail";
import { RunHeader } from "../features/run/components/RunHeader";
import { SummaryCards } from "../features/run/components/SummaryCards";
import { isFinished, runQueryOptions } from "../features/runs/api/queries";
import { runColor, type Series } from "../lib/series";

declare global {
  interface Window {
    /** Date.now() when each train/loss step was first drawn on a run page (read by scripts/bench_ui.py). */
    __tunelabDrawn?: Record<number, number>;
  }
}

const INITIAL_MAX_POINTS = 2000;

export function RunPage() {
  const { runId: param } = useParams();
  const runId = Number(param);
  if (!Number.isInteger(runId) || runId <= 0) return <RunNotFound label={param ?? ""} />;
  return <RunView key={runId} runId={runId} />;
}

function RunNotFound({ label }: { label: string }) {
  return (
    <EmptyState title={`Run ${label} does not exist`}>
      <Link to="/">Back to the runs</Link>
    </EmptyState>
  );
}

function RunView({ runId }: { runId: number }) {
  const queryClient = useQueryClient();
  const runQuery = useQuery({
    ...runQueryOptions(runId),
    // The event stream keeps this entry fresh; the slow poll only covers a stream that cannot connect.
    refetchInterval: (query) => (query.state.data && !isFinished(query.state.data) ? 10_000 : false),
  });
  const run = runQuery.data;
  const metrics = useQuery({ ...runMetricsQueryOptions(runId, INITIAL_MAX_POINTS), enabled: run !== undefined });
  const active = run !== undefined && !isFinished(run);
  // The REST read of the metrics starts after this run read, so it holds every flush up to run.metric_seq.
  const series = useLiveRunSeries(
    runId,
    metrics.data,
    active,
    () => void queryClient.invalidateQueries({ queryKey: artifactKeys.run(runId) }),
    run?.metric_seq ?? null,
  );
  const [controls, setControls] = useChartControls();

  const runs = useMemo<RunSeriesSet[]>(
    () => (run && series ? [{ runId, label: run.name, color: runColor(runId), series }] : []),
    [runId, run?.name, series],
  );
  const onLossDraw = useDrawnSteps(series);

  if (runQuery.isPending) return <Loading what="run" />;
  if (runQuery.error) {
    if (runQuery.error instanceof ApiError && runQuery.error.status === 404) return <RunNotFound label={`#${runId}`} />;
    return <ErrorBox error={runQuery.error} />;
  }
  if (!run) return null;

  const otherKeys = sortMetricKeys(Object.keys(series ?? {})).filter(
    (key) => !AXIS_KEYS.has(key) && !(RUN_CHART_KEYS as readonly string[]).includes(key),
  );

  return (
    <div className="run-page" data-testid="run-page" data-run-id={runId}>
      <RunHeader run={run} />
      <SummaryCards run={run} liveTokensPerSecond={lastValue(series?.["train/tokens_per_second"])} />
      <section className="card charts-toolbar">
        <ChartControls value={controls} onChange={setControls} />
        <ChartsStatus run={run} metricsError={metrics.error} loading={metrics.isPending} />
      </section>
      <div className="chart-grid">
        {[...RUN_CHART_KEYS, ...otherKeys].map((key) => (
          <MetricChartCard
            key={key}
            metricKey={key}
            runs={runs}
            controls={controls}
            bands
            onDraw={key === "train/loss" ? onLossDraw : undefined}
          />
        ))}
      </div>
      <LogTail runId={runId} active={active} />
      <div className="grid-2 run-bottom">
        <ConfigCard run={run} />
        <ArtifactsCard runId={runId} />
      </div>
    </div>
  );
}

function lastValue(series: Series | undefined): number | null {
  if (!series) return null;
  for (let i = series.value.length - 1; i >= 0; i--) if (series.value[i] !== null) return series.value[i];
  return null;
}

function ChartsStatus({ run, metricsError, loading }: { run: Run; metricsError: unknown; loading: boolean }) {
  if (metricsError) return <ErrorBox error={metricsError} />;
  if (loading) return <span className="help">Loading metrics…</span>;
  if (run.status === "queued") return <span className="help">Charts start when the run does.</span>;
  if (run.status === "running") return <span className="help live-dot">Live</span>;
  return null;
}

/** Record when each new train/loss step is first drawn, as Date.now() (the bench's clock on this machine). */
function useDrawnSteps(series: Record<string, Series> | null) {
  const seriesRef = useRef(series);
  seriesRef.current = series;
  const lastStep = useRef(-Infinity);
  return useCallback(() => {
    const loss = seriesRef.current?.["train/loss"];
    if (!loss || loss.step.length === 0) return;
    const drawn = (window.__tunelabDrawn ??= {});
    const now = Date.now();
    for (let i = loss.step.length - 1; i >= 0 && loss.step[i] > lastStep.current; i--) drawn[loss.step[i]] ??= now;
    lastStep.current = Math.max(lastStep.current, loss.step[loss.step.length - 1]);
  }, []);
}
