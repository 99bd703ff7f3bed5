// The runs page's view (filters, sort, columns and grouping) as URL search params, so a reload or a shared link shows
// the same list.
import type { Run, RunStatus } from "../../../api/client";
import { runDuration } from "../../../lib/format";
import type { RunsFilter } from "../api/queries";

export const RUN_STATUSES: RunStatus[] = ["queued", "running", "succeeded", "failed", "canceled"];
export const SORT_FIELDS = ["queued_at", "name", "status", "method", "best_eval_loss", "tokens_per_second", "wall_time_s"] as const;
export type SortField = (typeof SORT_FIELDS)[number];

export type RunsView = {
  status: RunStatus[];
  method?: string;
  model?: string;
  q?: string;
  /** Runs having every one of these tags. */
  tags: string[];
  /** Conditions on config params, as the API takes them: `r:16`, `learning_rate>0.0001`. */
  params: string[];
  /** Conditions on summary metrics: `eval/loss<2`, `min(eval/loss)<=1.5`. */
  metrics: string[];
  /** The table's figure columns; undefined: DEFAULT_COLUMNS. */
  columns?: ColumnId[];
  /** Rows grouped by this field of the runs; undefined: one row per run, ungrouped. */
  group?: GroupBy;
  sort: SortField;
  order: "asc" | "desc";
};

export const DEFAULT_VIEW: RunsView = { status: [], tags: [], params: [], metrics: [], sort: "queued_at", order: "desc" };

export type FilterKind = "tag" | "param" | "metric";

/**
 * The run's summary figures the table can show; `best` says which end of a column is highlighted, `sort` the API's
 * sort field (the list is sorted by the server, so a column without one does not sort), `group` where the column
 * chooser lists it (none: Summary).
 */
export const SUMMARY_COLUMNS = [
  { id: "base_run_id", label: "From run", title: "The run whose trained weights this one started from", group: "Lineage" },
  { id: "latest_train_loss", label: "Loss", title: "Latest train loss", best: "min" },
  { id: "best_eval_loss", label: "Eval", title: "Best eval loss", best: "min", sort: "best_eval_loss" },
  { id: "final_eval_loss", label: "Last eval", title: "Last eval loss", best: "min" },
  { id: "best_eval_perplexity", label: "PPL", title: "Perplexity of the best eval loss", best: "min" },
  { id: "rouge_l", label: "ROUGE-L", title: "Evaluation by generation: the tuned model's mean ROUGE-L F1, 0–1", best: "max", group: "Scores" },
  { id: "exact_match", label: "Exact match", title: "Evaluation by generation: rows the tuned model answered exactly", best: "max", group: "Scores" },
  { id: "bleu", label: "BLEU", title: "Evaluation by generation: the tuned model's corpus BLEU, 0–100", best: "max", group: "Scores" },
  {
    id: "reward_accuracy",
    label: "Reward acc.",
    title: "Preference objectives: eval pairs whose chosen answer the policy rewards above the rejected one",
    best: "max",
    group: "Scores",
  },
  { id: "trainable_percent", label: "Train %", title: "Trainable parameters, % of the model" },
  { id: "peak_memory_bytes", label: "Mem", title: "Peak memory", best: "min" },
  { id: "tokens_per_second", label: "Tok/s", title: "Training tokens per second", best: "max", sort: "tokens_per_second" },
  { id: "wall_time_s", label: "Time", title: "Duration", sort: "wall_time_s" },
] as const satisfies readonly { id: string; label: string; title: string; best?: "min" | "max"; sort?: SortField; group?: string }[];

export type SummaryColumnId = (typeof SUMMARY_COLUMNS)[number]["id"];

/** A run's figure in a summary column; null: it has none (yet). */
export function summaryValue(run: Run, id: SummaryColumnId): number | null {
  switch (id) {
    case "wall_time_s":
      return run.wall_time_s ?? runDuration(run.started_at, run.finished_at);
    case "rouge_l":
    case "exact_match":
    case "bleu":
      return run.generation_eval?.tuned?.[id] ?? null;
    default:
      return run[id] ?? null;
  }
}

export const METRIC_AGGREGATES = ["last", "min", "max"] as const;
export type MetricAggregate = (typeof METRIC_AGGREGATES)[number];
/** A logged metric's aggregate over the run, written as the metric filter writes it: `min(eval/loss)`. */
export type MetricColumnId = `${MetricAggregate}(${string})`;

/** A summary figure, `param.<name>`: a parameter of the run's resolved config, or a logged metric's aggregate. */
export type ColumnId = SummaryColumnId | `param.${string}` | MetricColumnId;

export const DEFAULT_COLUMNS: ColumnId[] = ["latest_train_loss", "best_eval_loss", "trainable_percent", "peak_memory_bytes", "tokens_per_second", "wall_time_s"];

/** The most logged metrics one list request answers (GET /runs takes at most 20 metric_column keys). */
export const MAX_METRIC_KEYS = 20;

const PARAM_COLUMN = /^param\.[A-Za-z_][A-Za-z0-9_]*$/;
// The metric filter's key characters; the server stores keys of at most 200.
const METRIC_KEY = /^[A-Za-z0-9_./-]{1,200}$/;
const METRIC_COLUMN = /^(last|min|max)\(([A-Za-z0-9_./-]{1,200})\)$/;

/** Whether a logged metric key can be a column (a key with other characters cannot be written in one). */
export function isMetricKey(key: string): boolean {
  return METRIC_KEY.test(key);
}

export function metricColumnId(key: string, aggregate: MetricAggregate): MetricColumnId {
  return `${aggregate}(${key})`;
}

/** The key and aggregate of a logged-metric column; null for any other column. */
export function parseMetricColumn(column: string): { key: string; aggregate: MetricAggregate } | null {
  const match = METRIC_COLUMN.exec(column);
  return match ? { aggregate: match[1] as MetricAggregate, key: match[2] } : null;
}

/** The distinct metric keys of these columns, in their order. */
export function metricKeysOf(columns: readonly ColumnId[]): string[] {
  return [...new Set(columns.map((c) => parseMetricColumn(c)?.key).filter((key): key is string => key !== undefined))];
}

/** A run's aggregate of a logged metric; null when the run has not logged it (or it was not asked for). */
export function metricValue(run: Run, column: MetricColumnId): number | null {
  const parsed = parseMetricColumn(column);
  return parsed ? (run.metric_columns?.[parsed.key]?.[parsed.aggregate] ?? null) : null;
}

// Only the metrics whose better end is known are ranked: the name (the key's last path segment) ends in one of these.
const LOWER_IS_BETTER = /(^|[/_])(loss|perplexity)$/;
const HIGHER_IS_BETTER = /(^|[/_])(accuracy|accuracies|rouge(_?[A-Za-z0-9]+)?|bleu|exact_match|reward|rewards\/margins)$/;

/**
 * Which end of a logged metric is better, whichever aggregate is shown: lower for losses and perplexity, higher for
 * accuracy, ROUGE, BLEU, exact match and reward; undefined for any other (grad norm, learning rate, a reward's std).
 */
export function metricBetter(key: string): "min" | "max" | undefined {
  if (LOWER_IS_BETTER.test(key)) return "min";
  if (HIGHER_IS_BETTER.test(key)) return "max";
  return undefined;
}

export function isColumnId(value: string): value is ColumnId {
  return SUMMARY_COLUMNS.some((c) => c.id === value) || PARAM_COLUMN.test(value) || METRIC_COLUMN.test(value);
}

/** The columns in the URL, without unknown ones, repeats, or metric columns past the MAX_METRIC_KEYS-th key. */
function parseColumns(raw: string | null): ColumnId[] | undefined {
  if (raw === null) return undefined;
  const keys = new Set<string>();
  return [...new Set(raw.split(",").filter(isColumnId))].filter((column) => {
    const metric = parseMetricColumn(column);
    if (!metric || keys.has(metric.key)) return true;
    if (keys.size >= MAX_METRIC_KEYS) return false;
    keys.add(metric.key);
    return true;
  });
}

/** What the runs table can group by: a field of the run, each of its tags, or a parameter of its resolved config. */
export const GROUP_FIELDS = ["study", "method", "objective", "model", "dataset", "tag"] as const;
export type GroupBy = (typeof GROUP_FIELDS)[number] | `param.${string}`;

export function isGroupBy(value: string): value is GroupBy {
  return (GROUP_FIELDS as readonly string[]).includes(value) || PARAM_COLUMN.test(value);
}

function sameColumns(a: ColumnId[], b: ColumnId[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

function nonEmpty(values: string[]): string[] {
  return [...new Set(values.map((v) => v.trim()).filter(Boolean))];
}

function groupOf(raw: string | null): GroupBy | undefined {
  return raw !== null && isGroupBy(raw) ? raw : undefined;
}

export function parseRunsView(params: URLSearchParams): RunsView {
  const status = (params.get("status") ?? "")
    .split(",")
    .filter((s): s is RunStatus => (RUN_STATUSES as string[]).includes(s));
  const sort = params.get("sort");
  const order = params.get("order");
  return {
    status,
    method: params.get("method") || undefined,
    model: params.get("model") || undefined,
    q: params.get("q")?.trim() || undefined,
    tags: nonEmpty(params.getAll("tag")),
    params: nonEmpty(params.getAll("param")),
    metrics: nonEmpty(params.getAll("metric")),
    columns: parseColumns(params.get("cols")),
    group: groupOf(params.get("group")),
    sort: (SORT_FIELDS as readonly string[]).includes(sort ?? "") ? (sort as SortField) : DEFAULT_VIEW.sort,
    order: order === "asc" || order === "desc" ? order : DEFAULT_VIEW.order,
  };
}

/** Search params for a view; defaults are left out so the plain page has a plain URL. */
export function runsViewParams(view: RunsView): URLSearchParams {
  const params = new URLSearchParams();
  if (view.status.length) params.set("status", view.status.join(","));
  if (view.method) params.set("method", view.method);
  if (view.model) params.set("model", view.model);
  if (view.q) params.set("q", view.q);
  for (const tag of view.tags) params.append("tag", tag);
  for (const param of view.params) params.append("param", param);
  for (const metric of view.metrics) params.append("metric", metric);
  if (view.columns && !sameColumns(view.columns, DEFAULT_COLUMNS)) params.set("cols", view.columns.join(","));
  if (view.group) params.set("group", view.group);
  if (view.sort !== DEFAULT_VIEW.sort || view.order !== DEFAULT_VIEW.order) {
    params.set("sort", view.sort);
    params.set("order", view.order);
  }
  return params;
}

export function isFiltered(view: RunsView): boolean {
  return (
    view.status.length > 0 || view.tags.length > 0 || view.params.length > 0 || view.metrics.length > 0 || Boolean(view.method || view.model || view.q)
  );
}

/** The view with one more (or one less) tag, param or metric condition. */
export function addFilter(view: RunsView, kind: FilterKind, value: string): RunsView {
  const text = value.trim();
  if (!text) return view;
  const field = kind === "tag" ? "tags" : kind === "param" ? "params" : "metrics";
  return view[field].includes(text) ? view : { ...view, [field]: [...view[field], text] };
}

export function removeFilter(view: RunsView, kind: FilterKind, value: string): RunsView {
  const field = kind === "tag" ? "tags" : kind === "param" ? "params" : "metrics";
  return { ...view, [field]: view[field].filter((v) => v !== value) };
}

export function columnsOf(view: RunsView): ColumnId[] {
  return view.columns ?? DEFAULT_COLUMNS;
}

/** Whether one more column of this logged metric fits in a list request (its key is shown already, or one more fits). */
export function canAddMetricColumn(view: RunsView, key: string): boolean {
  const keys = metricKeysOf(columnsOf(view));
  return keys.includes(key) || keys.length < MAX_METRIC_KEYS;
}

/**
 * Show or hide a column, keeping the summary columns in their table order, params after them and logged metrics last
 * (in the order they were added); a metric past the MAX_METRIC_KEYS-th key is not added.
 */
export function toggleColumn(view: RunsView, column: ColumnId, shown: boolean): RunsView {
  const metric = parseMetricColumn(column);
  if (shown && metric && !canAddMetricColumn(view, metric.key)) return view;
  const current = columnsOf(view).filter((c) => c !== column);
  const next = shown ? [...current, column] : current;
  const summary = SUMMARY_COLUMNS.map((c) => c.id).filter((id) => next.includes(id));
  const params = next.filter((c) => c.startsWith("param."));
  const metrics = next.filter((c) => parseMetricColumn(c) !== null);
  return { ...view, columns: [...summary, ...params, ...metrics] };
}

/** The export's address for the view's filters: every matching run, not one page. */
export function runsExportHref(view: RunsView, projectId: number | undefined, format: "csv" | "json"): string {
  const params = new URLSearchParams();
  if (projectId !== undefined) params.set("project_id", String(projectId));
  for (const status of view.status) params.append("status", status);
  if (view.method) params.set("method", view.method);
  if (view.model) params.set("model", view.model);
  if (view.q) params.set("q", view.q);
  for (const tag of view.tags) params.append("tag", tag);
  for (const param of view.params) params.append("param", param);
  for (const metric of view.metrics) params.append("metric", metric);
  params.set("format", format);
  return `/api/v1/runs/export?${params.toString()}`;
}

// Sorted: showing the min beside the last of a key, or reordering columns, asks for the same list (one cache entry).
function metricColumnKeys(view: RunsView): string[] | undefined {
  const keys = metricKeysOf(columnsOf(view)).slice(0, MAX_METRIC_KEYS).sort();
  return keys.length ? keys : undefined;
}

export function runsFilter(view: RunsView, cursor: string | undefined, limit: number): RunsFilter {
  return {
    status: view.status.length ? view.status : undefined,
    method: view.method,
    model: view.model,
    q: view.q,
    tag: view.tags.length ? view.tags : undefined,
    param: view.params.length ? view.params : undefined,
    metric: view.metrics.length ? view.metrics : undefined,
    metric_column: metricColumnKeys(view),
    sort: view.sort,
    order: view.order,
    limit,
    cursor,
  };
}

/** Clicking a column header: a new column starts in its natural order; the same column flips. */
export function toggleSort(view: RunsView, field: SortField): RunsView {
  if (view.sort === field) return { ...view, order: view.order === "asc" ? "desc" : "asc" };
  const ascending: SortField[] = ["name", "status", "method", "best_eval_loss"];
  return { ...view, sort: field, order: ascending.includes(field) ? "asc" : "desc" };
}

/** Compare link for the selected runs, at most `max` of them, in id order. */
export function compareHref(selected: Iterable<number>, max = 20): string {
  const ids = [...selected].sort((a, b) => a - b).slice(0, max);
  return `/compare?runs=${ids.join(",")}`;
}
