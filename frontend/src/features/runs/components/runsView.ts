// The runs page's view (filters and sort) as URL search params, so a reload or a shared link shows the same list.
import type { RunStatus } from "../../../api/client";
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
  sort: SortField;
  order: "asc" | "desc";
};

export const DEFAULT_VIEW: RunsView = { status: [], tags: [], params: [], metrics: [], sort: "queued_at", order: "desc" };

export type FilterKind = "tag" | "param" | "metric";

/** The run's summary figures the table can show; `best` says which end of a column is highlighted. */
export const SUMMARY_COLUMNS = [
  { id: "latest_train_loss", label: "Loss", title: "Latest train loss", best: "min" },
  { id: "best_eval_loss", label: "Eval", title: "Best eval loss", best: "min", sort: "best_eval_loss" },
  { id: "final_eval_loss", label: "Last eval", title: "Last eval loss", best: "min" },
  { id: "best_eval_perplexity", label: "PPL", title: "Perplexity of the best eval loss", best: "min" },
  { id: "trainable_percent", label: "Train %", title: "Trainable parameters, % of the model" },
  { id: "peak_memory_bytes", label: "Mem", title: "Peak memory", best: "min" },
  { id: "tokens_per_second", label: "Tok/s", title: "Training tokens per second", best: "max", sort: "tokens_per_second" },
  { id: "wall_time_s", label: "Time", title: "Duration", sort: "wall_time_s" },
] as const satisfies readonly { id: string; label: string; title: string; best?: "min" | "max"; sort?: SortField }[];

export type SummaryColumnId = (typeof SUMMARY_COLUMNS)[number]["id"];
/** A summary figure, or `param.<name>`: a parameter of the run's resolved config. */
export type ColumnId = SummaryColumnId | `param.${string}`;

export const DEFAULT_COLUMNS: ColumnId[] = ["latest_train_loss", "best_eval_loss", "trainable_percent", "peak_memory_bytes", "tokens_per_second", "wall_time_s"];

const PARAM_COLUMN = /^param\.[A-Za-z_][A-Za-z0-9_]*$/;

export function isColumnId(value: string): value is ColumnId {
  return SUMMARY_COLUMNS.some((c) => c.id === value) || PARAM_COLUMN.test(value);
}

function parseColumns(raw: string | null): ColumnId[] | undefined {
  if (raw === null) return undefined;
  return [...new Set(raw.split(",").filter(isColumnId))];
}

function sameColumns(a: ColumnId[], b: ColumnId[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

function nonEmpty(values: string[]): string[] {
  return [...new Set(values.map((v) => v.trim()).filter(Boolean))];
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

/** Show or hide a column, keeping the summary columns in their table order and params after them. */
export function toggleColumn(view: RunsView, column: ColumnId, shown: boolean): RunsView {
  const current = columnsOf(view).filter((c) => c !== column);
  const next = shown ? [...current, column] : current;
  const summary = SUMMARY_COLUMNS.map((c) => c.id).filter((id) => next.includes(id));
  const params = next.filter((c) => c.startsWith("param."));
  return { ...view, columns: [...summary, ...params] };
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

export function runsFilter(view: RunsView, cursor: string | undefined, limit: number): RunsFilter {
  return {
    status: view.status.length ? view.status : undefined,
    method: view.method,
    model: view.model,
    q: view.q,
    tag: view.tags.length ? view.tags : undefined,
    param: view.params.length ? view.params : undefined,
    metric: view.metrics.length ? view.metrics : undefined,
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
