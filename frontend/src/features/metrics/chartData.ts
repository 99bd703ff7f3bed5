/** Turn runs' metric series into what a LineChart draws for one key on the chosen x axis. */
import type { ChartSeries } from "../../components/charts/LineChart";
import { alignSeries, firstWallTime, fromMetricSeries, xValues, type MetricSeries, type Series, type XAxisKind, type XYSeries } from "../../lib/series";
import { AXIS_KEYS, isSystemKey, sortMetricKeys } from "./keys";

export type RunSeriesSet = {
  runId: number;
  label: string;
  color: string;
  series: Readonly<Record<string, Series>>;
  /** Line width (the chart's default when absent). */
  width?: number;
  /** Shade this run's min/max as a band even when the chart's bands are off (a mean's spread over seeds). */
  band?: boolean;
};

export type ChartData = {
  x: number[];
  series: ChartSeries[];
  /** Labels of runs that have this key but cannot be placed on the x axis (no tokens logged). */
  unplaced: string[];
};

export function seriesByKey(list: readonly MetricSeries[]): Record<string, Series> {
  const out: Record<string, Series> = {};
  for (const s of list) out[s.key] = fromMetricSeries(s);
  return out;
}

/**
 * The keys to chart when runs are set side by side (compare, study): every key any run logged, in the pages' order,
 * less the x axes and the training processes' CPU and memory samples, which stay on each run's page: they are not
 * what methods are compared by.
 */
export function comparedMetricKeys(sets: readonly RunSeriesSet[]): string[] {
  return sortMetricKeys(sets.flatMap((s) => Object.keys(s.series))).filter((key) => !AXIS_KEYS.has(key) && !isSystemKey(key));
}

export function buildChartData(key: string, runs: readonly RunSeriesSet[], xKind: XAxisKind, bands = false): ChartData {
  const inputs: XYSeries[] = [];
  const series: ChartSeries[] = [];
  const unplaced: string[] = [];
  for (const run of runs) {
    const s = run.series[key];
    if (!s || s.step.length === 0) continue;
    const x = xValues(s, xKind, {
      origin: xKind === "time" ? firstWallTime(Object.values(run.series)) : null,
      tokens: run.series["train/tokens_seen"],
    });
    if (!x) {
      unplaced.push(run.label);
      continue;
    }
    const band = ((bands && s.downsampled) || run.band) && s.min && s.max;
    inputs.push({ x, y: s.value, min: band ? s.min : null, max: band ? s.max : null });
    series.push({ label: run.label, color: run.color, values: [], ...(run.width !== undefined && { width: run.width }) });
  }
  const aligned = alignSeries(inputs);
  aligned.ys.forEach((y, i) => {
    series[i] = { ...series[i], values: y, min: aligned.mins[i], max: aligned.maxs[i] };
  });
  return { x: aligned.x, series, unplaced };
}
