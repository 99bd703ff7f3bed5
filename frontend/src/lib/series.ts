/** Pure series arithmetic for the charts: smoothing, merging live points, x axes and aligning several series. */
import type { Schemas } from "../api/client";

/** A metric series as the API returns it (GET /runs/{id}/metrics, POST /metrics/query). */
export type MetricSeries = Schemas["MetricSeriesPublic"];

/** One live point from the `metrics` SSE event: a logged point whose value is null when it was not finite. */
export type LivePoint = Omit<Schemas["MetricPointIn"], "value" | "wall_time"> & { value: number | null; wall_time: number };

/** A series the charts can hold while it grows: values may be null (non-finite points from the live stream). */
export type Series = {
  key: string;
  downsampled: boolean;
  step: number[];
  value: (number | null)[];
  wall_time: number[];
  min: (number | null)[] | null;
  max: (number | null)[] | null;
};

export type XAxisKind = "step" | "time" | "tokens";

export function fromMetricSeries(series: MetricSeries): Series {
  return {
    key: series.key,
    downsampled: series.downsampled,
    step: series.step,
    value: series.value,
    wall_time: series.wall_time,
    min: series.min,
    max: series.max,
  };
}

/**
 * Exponential moving average, debiased like TensorBoard and W&B: the first points are not dragged towards 0.
 * Nulls (and non-finite values) are skipped: they stay null and do not advance the average.
 */
export function ema(values: readonly (number | null)[], weight: number): (number | null)[] {
  const w = Math.min(Math.max(weight, 0), 0.999);
  if (w === 0) return values.slice();
  const out: (number | null)[] = new Array(values.length);
  let last = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    last = last * w + (1 - w) * v;
    count += 1;
    out[i] = last / (1 - Math.pow(w, count));
  }
  return out;
}

/**
 * Merge live points of one key into a series, in step order and without duplicates: a point at a step already
 * present replaces it, a point after the last step is appended. A point that falls between two steps is inserted
 * when the series is complete, and dropped when it is downsampled (its bucket already stands for it, and a replay
 * of the full history must not turn a 2,000-point series back into 100,000). Returns the same object when nothing
 * changed, otherwise a new series with new arrays (so a chart sees new data).
 */
export function mergePoints(series: Series, points: readonly LivePoint[]): Series {
  if (points.length === 0) return series;
  const incoming = points.length > 1 && !isSortedByStep(points) ? [...points].sort((a, b) => a.step - b.step) : points;
  const { step, value, wall_time, min, max } = series;
  const lastStep = step.length ? step[step.length - 1] : -Infinity;

  // Fast path, the common live case: everything is after the last step.
  if (incoming[0].step > lastStep) {
    const out = copySeries(series);
    for (const p of dedupeLastWins(incoming)) pushPoint(out, p);
    return out;
  }

  const out: Series = { ...series, step: [], value: [], wall_time: [], min: min ? [] : null, max: max ? [] : null };
  let i = 0;
  let j = 0;
  let changed = false;
  while (i < step.length || j < incoming.length) {
    const p = j < incoming.length ? incoming[j] : null;
    // Several incoming points at one step: the last one wins.
    if (p && j + 1 < incoming.length && incoming[j + 1].step === p.step) {
      j += 1;
      continue;
    }
    if (i < step.length && (!p || step[i] < p.step)) {
      out.step.push(step[i]);
      out.value.push(value[i]);
      out.wall_time.push(wall_time[i]);
      out.min?.push(min![i]);
      out.max?.push(max![i]);
      i += 1;
    } else if (p && i < step.length && step[i] === p.step) {
      if (value[i] !== p.value || wall_time[i] !== p.wall_time) changed = true;
      pushPoint(out, p);
      i += 1;
      j += 1;
    } else if (p) {
      if (p.step > lastStep || !series.downsampled) {
        pushPoint(out, p);
        changed = true;
      }
      j += 1;
    }
  }
  return changed ? out : series;
}

function isSortedByStep(points: readonly LivePoint[]): boolean {
  for (let i = 1; i < points.length; i++) if (points[i].step < points[i - 1].step) return false;
  return true;
}

function dedupeLastWins(points: readonly LivePoint[]): LivePoint[] {
  const out: LivePoint[] = [];
  for (const p of points) {
    if (out.length && out[out.length - 1].step === p.step) out[out.length - 1] = p;
    else out.push(p);
  }
  return out;
}

function copySeries(series: Series): Series {
  return {
    ...series,
    step: series.step.slice(),
    value: series.value.slice(),
    wall_time: series.wall_time.slice(),
    min: series.min ? series.min.slice() : null,
    max: series.max ? series.max.slice() : null,
  };
}

function pushPoint(series: Series, p: LivePoint): void {
  series.step.push(p.step);
  series.value.push(p.value);
  series.wall_time.push(p.wall_time);
  // A raw point is its own bucket.
  series.min?.push(p.value);
  series.max?.push(p.value);
}

/** Merge a batch of live points of any keys into a map of series; keys not seen before start a new series. */
export function mergeLivePoints(
  byKey: Readonly<Record<string, Series>>,
  points: readonly LivePoint[],
): Record<string, Series> {
  const grouped = new Map<string, LivePoint[]>();
  for (const p of points) {
    const list = grouped.get(p.key);
    if (list) list.push(p);
    else grouped.set(p.key, [p]);
  }
  const out: Record<string, Series> = { ...byKey };
  for (const [key, list] of grouped) {
    const base = out[key] ?? { key, downsampled: false, step: [], value: [], wall_time: [], min: null, max: null };
    out[key] = mergePoints(base, list);
  }
  return out;
}

/** The wall time of a run's first point, over all its series: the origin of the relative-time axis. */
export function firstWallTime(series: Iterable<Pick<Series, "wall_time">>): number | null {
  let first: number | null = null;
  for (const s of series) {
    for (const t of s.wall_time) {
      if (Number.isFinite(t)) {
        if (first === null || t < first) first = t;
        break;
      }
    }
  }
  return first;
}

/** Seconds since `origin` for each wall time. */
export function relativeTime(wallTime: readonly number[], origin: number): number[] {
  return wallTime.map((t) => t - origin);
}

/**
 * Tokens seen at each step, from the cumulative train/tokens_seen series: linear interpolation between logged
 * steps, from (0, 0) before the first one, and the last value held after the last one (a step logged before its
 * token count arrives). Null when the run logged no token counts.
 */
export function tokensAtSteps(
  steps: readonly number[],
  tokens: Pick<Series, "step" | "value"> | undefined,
): number[] | null {
  if (!tokens) return null;
  const ks: number[] = [];
  const vs: number[] = [];
  for (let i = 0; i < tokens.step.length; i++) {
    const v = tokens.value[i];
    if (v !== null && Number.isFinite(v)) {
      ks.push(tokens.step[i]);
      vs.push(v);
    }
  }
  if (ks.length === 0) return null;
  const out = new Array<number>(steps.length);
  let j = 0;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    // Steps are usually ascending: move the cursor forward, and restart only when they are not.
    if (j > 0 && ks[j - 1] > s) j = 0;
    while (j < ks.length && ks[j] < s) j += 1;
    if (j < ks.length && ks[j] === s) out[i] = vs[j];
    else if (j === 0) out[i] = ks[0] > 0 ? (vs[0] * Math.max(s, 0)) / ks[0] : vs[0];
    else if (j === ks.length) out[i] = vs[ks.length - 1];
    else {
      const s0 = ks[j - 1];
      const s1 = ks[j];
      out[i] = vs[j - 1] + ((vs[j] - vs[j - 1]) * (s - s0)) / (s1 - s0);
    }
  }
  return out;
}

/** The x values of a series on the chosen axis; null when the axis cannot be drawn for this run. */
export function xValues(
  series: Pick<Series, "step" | "wall_time">,
  kind: XAxisKind,
  context: { origin: number | null; tokens?: Pick<Series, "step" | "value"> },
): number[] | null {
  if (kind === "step") return series.step as number[];
  if (kind === "time") return context.origin === null ? null : relativeTime(series.wall_time, context.origin);
  return tokensAtSteps(series.step, context.tokens);
}

export type XYSeries = {
  x: readonly number[];
  y: readonly (number | null)[];
  min?: readonly (number | null)[] | null;
  max?: readonly (number | null)[] | null;
};

export type AlignedData = {
  x: number[];
  ys: (number | null)[][];
  mins: ((number | null)[] | null)[];
  maxs: ((number | null)[] | null)[];
};

/**
 * Put several series on one shared, ascending x (the union of their x values), with null where a series has no
 * point: the shape uPlot draws. Within one series, a repeated x keeps its last point.
 */
export function alignSeries(series: readonly XYSeries[]): AlignedData {
  if (series.length === 1 && isStrictlyAscending(series[0].x)) {
    const s = series[0];
    return { x: s.x.slice(), ys: [s.y.slice()], mins: [s.min ? s.min.slice() : null], maxs: [s.max ? s.max.slice() : null] };
  }
  let total = 0;
  for (const s of series) total += s.x.length;
  const all = new Float64Array(total);
  let n = 0;
  for (const s of series) for (const x of s.x) all[n++] = x;
  all.sort();
  const x: number[] = [];
  for (let i = 0; i < n; i++) if (i === 0 || all[i] !== all[i - 1]) x.push(all[i]);

  const index = new Map<number, number>();
  x.forEach((v, i) => index.set(v, i));
  const ys: (number | null)[][] = [];
  const mins: ((number | null)[] | null)[] = [];
  const maxs: ((number | null)[] | null)[] = [];
  for (const s of series) {
    const y = new Array<number | null>(x.length).fill(null);
    const lo = s.min ? new Array<number | null>(x.length).fill(null) : null;
    const hi = s.max ? new Array<number | null>(x.length).fill(null) : null;
    for (let i = 0; i < s.x.length; i++) {
      const at = index.get(s.x[i])!;
      y[at] = s.y[i];
      if (lo) lo[at] = s.min![i];
      if (hi) hi[at] = s.max![i];
    }
    ys.push(y);
    mins.push(lo);
    maxs.push(hi);
  }
  return { x, ys, mins, maxs };
}

function isStrictlyAscending(x: readonly number[]): boolean {
  for (let i = 1; i < x.length; i++) if (!(x[i] > x[i - 1])) return false;
  return true;
}

/** Count of the non-null values: the points a chart actually draws. */
export function countPoints(values: readonly (number | null)[]): number {
  let n = 0;
  for (const v of values) if (v !== null) n += 1;
  return n;
}

/** A colour that belongs to a run id, the same whichever runs are selected with it (golden-angle hues). */
export function runColor(runId: number): string {
  const hue = Math.round((runId * 137.508 + 210) % 360);
  return `hsl(${hue} 65% 42%)`;
}
