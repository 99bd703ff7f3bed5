// One run: header, summary, live charts, log, config and artifacts. The signed-in run page and a shared link
// show the same view; a shared one is read-only and shows the log and artifacts only when the link allows downloads.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useMemo, useRef, type ReactNode } from "react";

import { ApiError, type Run } from "../../../api/client";
import { EmptyState, ErrorBox, Loading } from "../../../components/ui/ui";
import { runColor, type Series } from "../../../lib/series";
import {
  AXIS_KEYS,
  ChartControls,
  isSystemKey,
  MetricChartCard,
  RUN_CHART_KEYS,
  runMetricsQueryOptions,
  sortMetricKeys,
  SystemMetricsSection,
  useChartControls,
  useLiveRunSeries,
  type RunSeriesSet,
} from "../../metrics";
import { isFinished, runQueryOptions } from "../../runs";
import { artifactKeys } from "../api/queries";
import { ArtifactsCard } from "./ArtifactsCard";
import { ConfigCard } from "./ConfigCard";
import { GenerationCard } from "./GenerationCard";
import { LineageCard } from "./LineageCard";
import { LogTail } from "./LogTail";
import { RunHeader } from "./RunHeader";
import { shownTokensPerSecond } from "../summary";
import { SummaryCards } from "./SummaryCards";

declare global {
  interface Window {
    /** Date.now() when each train/loss step was first drawn on a run page (read by scripts/bench_ui.py). */
    __tunelabDrawn?: Record<number, number>;
  }
}

const INITIAL_MAX_POINTS = 2000;

export type RunViewProps = {
  runId: number;
  /** The header's buttons for this run (cancel, clone, share…); none on a shared page. */
  actions?: (run: Run) => ReactNode;
  /** Show the log and the artifacts (a share link made without downloads cannot read them). */
  downloads?: boolean;
  /** Shown instead of the page when the run does not exist (or is not the caller's to read). */
  notFound: ReactNode;
};

export function RunView({ runId, actions, downloads = true, notFound }: RunViewProps) {
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
    // eslint-disable-next-line react-hooks/exhaustive-deps -- run's live fields (status, progress) change no series
    [runId, run?.name, series],
  );
  const onLossDraw = useDrawnSteps(series);

  if (runQuery.isPending) return <Loading what="run" />;
  if (runQuery.error) {
    if (runQuery.error instanceof ApiError && runQuery.error.status === 404) return <>{notFound}</>;
    return <ErrorBox error={runQuery.error} />;
  }
  if (!run) return null;

  const otherKeys = sortMetricKeys(Object.keys(series ?? {})).filter(
    (key) => !AXIS_KEYS.has(key) && !isSystemKey(key) && !(RUN_CHART_KEYS as readonly string[]).includes(key),
  );

  return (
    <div className="run-page" data-run-id={runId}>
      <RunHeader run={run} actions={actions?.(run)} />
      <SummaryCards run={run} tokensPerSecond={shownTokensPerSecond(run, series?.["train/tokens_per_second"])} />
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
      <LineageCard run={run} linkRuns={actions !== undefined} />
      <GenerationCard run={run} downloads={downloads} />
      <SystemMetricsSection runs={runs} controls={controls} />
      {downloads && <LogTail runId={runId} active={active} />}
      <div className={downloads ? "grid-2 run-bottom" : "run-bottom"}>
        <ConfigCard run={run} />
        {downloads && <ArtifactsCard runId={runId} />}
      </div>
    </div>
  );
}

export function RunNotFound({ label, children }: { label: string; children?: ReactNode }) {
  return <EmptyState title={`Run ${label} does not exist`}>{children}</EmptyState>;
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
