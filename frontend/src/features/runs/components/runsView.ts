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
  sort: SortField;
  order: "asc" | "desc";
};

export const DEFAULT_VIEW: RunsView = { status: [], sort: "queued_at", order: "desc" };

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
  if (view.sort !== DEFAULT_VIEW.sort || view.order !== DEFAULT_VIEW.order) {
    params.set("sort", view.sort);
    params.set("order", view.order);
  }
  return params;
}

export function isFiltered(view: RunsView): boolean {
  return view.status.length > 0 || Boolean(view.method || view.model || view.q);
}

export function runsFilter(view: RunsView, cursor: string | undefined, limit: number): RunsFilter {
  return {
    status: view.status.length ? view.status : undefined,
    method: view.method,
    model: view.model,
    q: view.q,
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
