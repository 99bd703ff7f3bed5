// What the analysis view draws, read from runs as the API returns them: which runs may be drawn, one dimension per
// config value that varies across them and per result figure one of them reports, and each dimension's scale (linear,
// log or categorical), tick labels, brushes and colours. Pure: the charts only lay out what this module decides.
import type { Run } from "../../api/client";
import { axisRange } from "../../lib/axis";
import { formatBytes, formatDuration, formatNumber, formatPercent } from "../../lib/format";
import { formatConfigValue } from "../run";

/** An analysis axis's [low, high]: lib/axis.ts's range, padded where every value is one. */
export const paddedDomain = axisRange;

export type ValueFormat = "number" | "bytes" | "duration" | "percent";
export type Better = "lower" | "higher";

type DimensionBase = {
  /** Unique across groups: `param:learning_rate`, `run:method`, `figure:best_eval_loss`. */
  key: string;
  label: string;
  group: "param" | "figure";
};
export type NumericDimension = DimensionBase & {
  kind: "numeric";
  format: ValueFormat;
  /** Which way a figure is better; null for params and for figures that are neither (trainable %). */
  better: Better | null;
  read: (run: Run) => number | null;
};
export type CategoricalDimension = DimensionBase & { kind: "categorical"; read: (run: Run) => string | null };
export type Dimension = NumericDimension | CategoricalDimension;

export type NumericAxis = {
  kind: "numeric";
  dimension: NumericDimension;
  /** The values' range, padded when they are all one value so that a point sits inside the axis. */
  domain: [number, number];
  log: boolean;
  /** Labels for the domain's two ends, precise enough to differ. */
  ticks: [string, string];
  /** Some run has no value here: the chart keeps a "none" slot below the axis. */
  hasMissing: boolean;
};
export type CategoricalAxis = {
  kind: "categorical";
  dimension: CategoricalDimension;
  categories: string[];
  hasMissing: boolean;
};
export type Axis = NumericAxis | CategoricalAxis;

// Runs: which are drawn -----------------------------------------------------------------------------------------

/**
 * Only a succeeded run's figures are final. A running, failed or canceled run's losses and scores are partial and
 * must never be placed on an axis beside finished ones, where they would read as a result.
 */
export function isDrawable(run: Pick<Run, "status">): boolean {
  return run.status === "succeeded";
}

/** Why a run is not drawn, in the words the list under the chart uses: "running, step 40 of 60". */
export function notDrawnReason(run: Pick<Run, "status" | "progress">): string {
  const { current_step: step, total_steps: total } = run.progress;
  const at = total ? `step ${step} of ${total}` : `step ${step}`;
  switch (run.status) {
    case "queued":
      return "queued";
    case "running":
      return `running, ${at}`;
    case "failed":
    case "canceled":
      return step > 0 ? `${run.status} at ${at}` : `${run.status} before its first step`;
    case "succeeded":
      return "succeeded";
  }
}

export type NotDrawn = { run: Run; reason: string };

export function splitRuns(runs: readonly Run[]): { drawn: Run[]; notDrawn: NotDrawn[] } {
  const drawn: Run[] = [];
  const notDrawn: NotDrawn[] = [];
  for (const run of runs) {
    if (isDrawable(run)) drawn.push(run);
    else notDrawn.push({ run, reason: notDrawnReason(run) });
  }
  return { drawn, notDrawn };
}

// Dimensions ----------------------------------------------------------------------------------------------------

function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** The run's resolved training params (`config.params`); {} when the config holds none. */
export function runParams(run: Pick<Run, "config">): Record<string, unknown> {
  const params = (run.config as { params?: unknown }).params;
  return params && typeof params === "object" && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
}

function datasetName(run: Run): string | null {
  const dataset = (run.config as { dataset?: unknown }).dataset;
  if (dataset && typeof dataset === "object") {
    const { id, name } = dataset as { id?: number; name?: string };
    if (name) return name;
    if (id !== undefined) return `#${id}`;
  }
  return run.dataset_id !== null && run.dataset_id !== undefined ? `#${run.dataset_id}` : null;
}

function figure(
  name: string,
  label: string,
  better: Better | null,
  read: (run: Run) => number | null | undefined,
  format: ValueFormat = "number",
): NumericDimension {
  return { kind: "numeric", key: `figure:${name}`, label, group: "figure", format, better, read: (run) => finite(read(run)) };
}

/** The result figures a run can report, in the order their axes take. */
export const FIGURES: readonly NumericDimension[] = [
  figure("best_eval_loss", "Best eval loss", "lower", (r) => r.best_eval_loss),
  figure("final_eval_loss", "Final eval loss", "lower", (r) => r.final_eval_loss),
  figure("best_eval_perplexity", "Eval perplexity", "lower", (r) => r.best_eval_perplexity),
  figure("rouge_l", "ROUGE-L", "higher", (r) => r.generation_eval?.tuned?.rouge_l),
  figure("exact_match", "Exact match", "higher", (r) => r.generation_eval?.tuned?.exact_match),
  figure("bleu", "BLEU", "higher", (r) => r.generation_eval?.tuned?.bleu),
  figure("reward_accuracy", "Reward accuracy", "higher", (r) => r.reward_accuracy),
  figure("reward_margin", "Reward margin", "higher", (r) => r.reward_margin),
  figure("trainable_percent", "Trainable %", null, (r) => r.trainable_percent, "percent"),
  figure("peak_memory_bytes", "Peak memory", "lower", (r) => r.peak_memory_bytes, "bytes"),
  figure("tokens_per_second", "Tokens/s", "higher", (r) => r.tokens_per_second),
  figure("wall_time_s", "Wall time", "lower", (r) => r.wall_time_s, "duration"),
];

const RUN_FIELDS: readonly CategoricalDimension[] = [
  { kind: "categorical", key: "run:objective", label: "objective", group: "param", read: (r) => r.objective || null },
  { kind: "categorical", key: "run:method", label: "method", group: "param", read: (r) => r.method || null },
  { kind: "categorical", key: "run:model", label: "model", group: "param", read: (r) => r.model || null },
  { kind: "categorical", key: "run:dataset", label: "dataset", group: "param", read: datasetName },
];

const NONE = "\u0000none";

function varies(values: readonly unknown[]): boolean {
  const seen = new Set(values.map((v) => (v === null || v === undefined ? NONE : typeof v === "number" ? String(v) : formatConfigValue(v))));
  return seen.size > 1;
}

/** A param's dimension: numeric when every run that sets it sets a finite number, otherwise categorical. */
function paramDimension(name: string, runs: readonly Run[]): Dimension {
  const key = `param:${name}`;
  const present = runs.map((run) => runParams(run)[name]).filter((v) => v !== null && v !== undefined);
  if (present.every((v) => finite(v) !== null)) {
    return { kind: "numeric", key, label: name, group: "param", format: "number", better: null, read: (run) => finite(runParams(run)[name]) };
  }
  return {
    kind: "categorical",
    key,
    label: name,
    group: "param",
    read: (run) => {
      const value = runParams(run)[name];
      return value === null || value === undefined ? null : formatConfigValue(value);
    },
  };
}

/**
 * The dimensions of these runs (pass the drawn ones): objective, method, model and dataset where they differ, then
 * each param that differs (a param one run sets and another does not differs), then each figure at least one run
 * reports.
 */
export function extractDimensions(runs: readonly Run[]): Dimension[] {
  const fields = RUN_FIELDS.filter((d) => varies(runs.map(d.read)));
  const names = [...new Set(runs.flatMap((run) => Object.keys(runParams(run))))].sort();
  const params = names.filter((name) => varies(runs.map((run) => runParams(run)[name]))).map((name) => paramDimension(name, runs));
  const figures = FIGURES.filter((d) => runs.some((run) => d.read(run) !== null));
  return [...fields, ...params, ...figures];
}

// Scales --------------------------------------------------------------------------------------------------------

/** Decades a log axis must span: a 1e-5, 1e-4, 1e-3 sweep already crowds its two low runs together on a linear one. */
export const LOG_DECADES = 2;

/** A log axis for positive values spanning two decades or more (a learning rate sweep, memory from 1e6 to 1e10). */
export function isLogScale(values: readonly number[]): boolean {
  if (values.length < 2) return false;
  const lo = Math.min(...values);
  // By logarithms: 1e-3 / 1e-5 is 99.99999999999999 in floating point.
  return lo > 0 && Math.log10(Math.max(...values)) - Math.log10(lo) >= LOG_DECADES - 1e-9;
}


/** A number in `digits` significant digits, in exponent form where fixed digits would be long. */
export function formatPrecise(value: number, digits: number): string {
  if (value === 0) return "0";
  if (Math.abs(value) >= 1e5 || Math.abs(value) < 1e-3) return value.toExponential(digits - 1);
  return Number(value.toPrecision(digits)).toString();
}

const UNITS: Record<ValueFormat, string> = { number: "", bytes: " B", duration: " s", percent: " %" };

export function formatValue(value: number | null, format: ValueFormat): string {
  if (value === null) return "—";
  if (format === "bytes") return formatBytes(value);
  if (format === "duration") return formatDuration(value);
  if (format === "percent") return formatPercent(value);
  return formatNumber(value);
}

/**
 * Labels for an axis's two ends that differ whenever the ends do: the usual format first, then as many significant
 * digits as it takes (2e-4 and 2.0001e-4 read "2.0000e-4" and "2.0001e-4", not twice "2.00e-4").
 */
export function tickLabels([lo, hi]: [number, number], format: ValueFormat): [string, string] {
  const usual: [string, string] = [formatValue(lo, format), formatValue(hi, format)];
  if (usual[0] !== usual[1] || lo === hi) return usual;
  for (let digits = 2; digits <= 17; digits++) {
    const [a, b] = [formatPrecise(lo, digits), formatPrecise(hi, digits)];
    if (a !== b) return [a + UNITS[format], b + UNITS[format]];
  }
  return [String(lo) + UNITS[format], String(hi) + UNITS[format]];
}

/** Categories in the order people expect: "2" before "10", then alphabetically. */
function sortCategories(values: Iterable<string>): string[] {
  return [...new Set(values)].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
}

/** The axis of one dimension over these runs (pass the drawn ones). */
export function buildAxis(dimension: Dimension, runs: readonly Run[]): Axis {
  if (dimension.kind === "categorical") {
    const values = runs.map(dimension.read);
    const present = values.filter((v): v is string => v !== null);
    return { kind: "categorical", dimension, categories: sortCategories(present), hasMissing: present.length < values.length };
  }
  const values = runs.map(dimension.read);
  const present = values.filter((v): v is number => v !== null);
  const log = isLogScale(present);
  const domain = axisRange(present, log);
  return { kind: "numeric", dimension, domain, log, ticks: tickLabels(domain, dimension.format), hasMissing: present.length < values.length };
}

/** Where a numeric value sits on its axis: 0 at the bottom (the domain's low end), 1 at the top. */
export function numericPosition(axis: NumericAxis, value: number): number {
  const t = (v: number) => (axis.log ? Math.log10(v) : v);
  const [lo, hi] = axis.domain;
  return (t(value) - t(lo)) / (t(hi) - t(lo));
}

/** Where category `index` of `count` sits: evenly spaced, none on an end (one category: the middle). */
export function categoryPosition(index: number, count: number): number {
  return (index + 0.5) / count;
}

/** Where the run sits on the axis, 0 (bottom) to 1 (top); null when it has no value there. */
export function axisPosition(axis: Axis, run: Run): number | null {
  if (axis.kind === "categorical") {
    const value = axis.dimension.read(run);
    const index = value === null ? -1 : axis.categories.indexOf(value);
    return index === -1 ? null : categoryPosition(index, axis.categories.length);
  }
  const value = axis.dimension.read(run);
  return value === null || (axis.log && value <= 0) ? null : numericPosition(axis, value);
}

/** The run's value on a dimension as a cell or a tooltip reads it. */
export function formatRunValue(dimension: Dimension, run: Run): string {
  return dimension.kind === "categorical" ? (dimension.read(run) ?? "—") : formatValue(dimension.read(run), dimension.format);
}

/** An axis's heading: its label, and "(log)" where its scale is. */
export function axisTitle(axis: Axis): string {
  return axis.kind === "numeric" && axis.log ? `${axis.dimension.label} (log)` : axis.dimension.label;
}

// Choices -------------------------------------------------------------------------------------------------------

const BEST_EVAL_LOSS = "figure:best_eval_loss";

/** What lines are coloured by when the user has not chosen: best eval loss, or else the first figure reported. */
export function defaultColorKey(dimensions: readonly Dimension[]): string | null {
  const figures = dimensions.filter((d) => d.group === "figure");
  return (figures.find((d) => d.key === BEST_EVAL_LOSS) ?? figures[0])?.key ?? null;
}

/** The scatter's x when the user has not chosen: learning rate, or else the first param that varies, or a figure. */
export function defaultScatterX(dimensions: readonly Dimension[]): string | null {
  const params = dimensions.filter((d) => d.group === "param");
  return (params.find((d) => d.key === "param:learning_rate") ?? params[0] ?? dimensions[0])?.key ?? null;
}

/** The scatter's y when the user has not chosen: best eval loss, or else the first figure (not the x). */
export function defaultScatterY(dimensions: readonly Dimension[], xKey: string | null): string | null {
  const figures = dimensions.filter((d): d is NumericDimension => d.group === "figure" && d.kind === "numeric");
  const best = figures.find((d) => d.key === BEST_EVAL_LOSS && d.key !== xKey);
  return (best ?? figures.find((d) => d.key !== xKey) ?? figures[0])?.key ?? null;
}

/** The chosen key where it still names a dimension (runs come and go), or else the default. */
export function chosenOr(dimensions: readonly Dimension[], chosen: string | null, fallback: string | null): string | null {
  return chosen !== null && dimensions.some((d) => d.key === chosen) ? chosen : fallback;
}

// Colour --------------------------------------------------------------------------------------------------------

/** Viridis from its dark end to 0.85: its light yellow end would vanish on the white page. */
export const RAMP = ["#440154", "#414487", "#2a788e", "#22a884", "#7ad151"] as const;
export const NO_VALUE_COLOR = "#9aa3ae";

function hexRgb(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** The ramp's colour at t (0 to 1, clamped), interpolated between its stops. */
export function rampColor(t: number): string {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  const scaled = clamped * (RAMP.length - 1);
  const i = Math.min(Math.floor(scaled), RAMP.length - 2);
  const f = scaled - i;
  const [a, b] = [hexRgb(RAMP[i]), hexRgb(RAMP[i + 1])];
  const mix = a.map((c, k) => Math.round(c + (b[k] - c) * f));
  return `#${mix.map((c) => c.toString(16).padStart(2, "0")).join("")}`;
}

/** A run's colour on the colour axis: the ramp at its position (low values dark), grey without a value or axis. */
export function runColor(axis: NumericAxis | null, run: Run): string {
  const position = axis ? axisPosition(axis, run) : null;
  return position === null ? NO_VALUE_COLOR : rampColor(position);
}

/**
 * The order lines are drawn in: runs without a value first, then the worst to the best on the colour axis, so that
 * the best runs lie on top where lines cross. Without a direction (trainable %), by value.
 */
export function drawOrder(runs: readonly Run[], axis: NumericAxis | null): Run[] {
  if (!axis) return [...runs];
  const sign = axis.dimension.better === "lower" ? -1 : 1;
  const score = (run: Run) => {
    const value = axis.dimension.read(run);
    return value === null ? -Infinity : sign * value;
  };
  return [...runs].sort((a, b) => score(a) - score(b));
}

// Brushes -------------------------------------------------------------------------------------------------------

/** A range kept on an axis: values between lo and hi on a numeric axis, a set of categories on a categorical one. */
export type Brush = { kind: "range"; lo: number; hi: number } | { kind: "categories"; values: string[] };

function positionValue(axis: NumericAxis, position: number): number {
  const t = (v: number) => (axis.log ? Math.log10(v) : v);
  const [lo, hi] = axis.domain;
  const raw = t(lo) + position * (t(hi) - t(lo));
  return axis.log ? 10 ** raw : raw;
}

/**
 * The brush a drag from one position to another (0 bottom, 1 top) makes. It holds values, not positions, so that it
 * keeps the same runs when the axis rescales as more runs finish. Null when the drag catches no category.
 */
export function brushFromPositions(axis: Axis, from: number, to: number): Brush | null {
  const [p0, p1] = [Math.max(0, Math.min(from, to)), Math.min(1, Math.max(from, to))];
  if (axis.kind === "numeric") return { kind: "range", lo: positionValue(axis, p0), hi: positionValue(axis, p1) };
  const n = axis.categories.length;
  const values = axis.categories.filter((_, i) => {
    const p = categoryPosition(i, n);
    return p >= p0 && p <= p1;
  });
  return values.length ? { kind: "categories", values } : null;
}

/** The stretch of the axis a brush covers, [bottom, top] in positions, for drawing it; null when it covers none. */
export function brushExtent(axis: Axis, brush: Brush): [number, number] | null {
  if (axis.kind === "numeric" && brush.kind === "range") {
    // A brush made on a linear axis may reach 0 or below, which a log axis cannot place: it starts at the bottom.
    const lo = axis.log && brush.lo <= 0 ? 0 : numericPosition(axis, brush.lo);
    const hi = numericPosition(axis, brush.hi);
    return [Math.max(0, Math.min(lo, hi)), Math.min(1, Math.max(lo, hi))];
  }
  if (axis.kind === "categorical" && brush.kind === "categories") {
    const n = axis.categories.length;
    const positions = axis.categories.flatMap((c, i) => (brush.values.includes(c) ? [categoryPosition(i, n)] : []));
    if (!positions.length) return null;
    const half = 0.5 / n;
    return [Math.min(...positions) - half, Math.max(...positions) + half];
  }
  return null;
}

/** Whether the run's value on the axis lies in the brush (a run without a value there does not). */
export function inBrush(axis: Axis, brush: Brush, run: Run): boolean {
  if (axis.kind === "numeric" && brush.kind === "range") {
    const value = axis.dimension.read(run);
    return value !== null && value >= brush.lo && value <= brush.hi;
  }
  if (axis.kind === "categorical" && brush.kind === "categories") {
    const value = axis.dimension.read(run);
    return value !== null && brush.values.includes(value);
  }
  return true;
}

/** Whether the run lies in every brush set on these axes; brushes on axes not shown are ignored. */
export function inAllBrushes(axes: readonly Axis[], brushes: Readonly<Record<string, Brush>>, run: Run): boolean {
  return axes.every((axis) => {
    const brush = brushes[axis.dimension.key];
    return !brush || inBrush(axis, brush, run);
  });
}

// Scatter -------------------------------------------------------------------------------------------------------

export type ScatterPoint = { run: Run; x: number; y: number };

/**
 * The scatter's points (positions 0 to 1 on each axis) for the drawable runs that have both values, and the drawable
 * runs left out for lack of one. Runs that are not drawable are not points, whatever they report.
 */
export function scatterPoints(runs: readonly Run[], xAxis: Axis, yAxis: Axis): { points: ScatterPoint[]; missing: NotDrawn[] } {
  const points: ScatterPoint[] = [];
  const missing: NotDrawn[] = [];
  for (const run of runs.filter(isDrawable)) {
    const x = axisPosition(xAxis, run);
    const y = axisPosition(yAxis, run);
    if (x !== null && y !== null) points.push({ run, x, y });
    else {
      const lacking = [x === null ? xAxis : null, y === null && yAxis !== xAxis ? yAxis : null].filter((a): a is Axis => a !== null);
      missing.push({ run, reason: `no ${lacking.map((a) => a.dimension.label).join(" or ")}` });
    }
  }
  return { points, missing };
}
