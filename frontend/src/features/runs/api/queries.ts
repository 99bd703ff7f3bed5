// queryOptions factories: the only source of cache keys for runs, methods and models (datasets: features/datasets).
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Run } from "../../../api/client";

export type RunsFilter = {
  /** Only this project's runs; undefined: every project of the caller (or a share link's runs). */
  project_id?: number;
  status?: Run["status"][];
  method?: string;
  model?: string;
  q?: string;
  tag?: string[];
  param?: string[];
  metric?: string[];
  /** Logged metric keys to answer in each run's `metric_columns` (last, min, max); at most 20. */
  metric_column?: string[];
  sort?: "queued_at" | "name" | "status" | "method" | "best_eval_loss" | "tokens_per_second" | "wall_time_s";
  order?: "asc" | "desc";
  limit?: number;
  cursor?: string;
  ids?: number[];
};

const FINISHED = new Set(["succeeded", "failed", "canceled"]);

export function isFinished(run: Pick<Run, "status">): boolean {
  return FINISHED.has(run.status);
}

export const runKeys = {
  all: ["runs"] as const,
  list: (filter: RunsFilter) => ["runs", "list", filter] as const,
  detail: (runId: number) => ["runs", "detail", runId] as const,
  metricKeys: (projectId: number | undefined) => ["runs", "metric-keys", projectId ?? null] as const,
};

export function runsQueryOptions(filter: RunsFilter) {
  return queryOptions({
    queryKey: runKeys.list(filter),
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/runs", { params: { query: filter }, signal })),
    // Live badges and progress without a socket per row: poll while anything listed is still moving.
    refetchInterval: (query) => (query.state.data?.data.some((run) => !isFinished(run)) ? 2_000 : false),
  });
}

/** The metric keys the project's runs logged (system/* last): the logged-metric columns the runs table can show. */
export function metricKeysQueryOptions(projectId: number | undefined) {
  return queryOptions({
    queryKey: runKeys.metricKeys(projectId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/metric-keys", { params: { query: { project_id: projectId } }, signal })),
    // New keys appear as runs log them; a minute old is fresh enough for a column chooser.
    staleTime: 60_000,
  });
}

export function runQueryOptions(runId: number) {
  return queryOptions({
    queryKey: runKeys.detail(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}", { params: { path: { run_id: runId } }, signal })),
  });
}

export function methodsQueryOptions() {
  return queryOptions({
    queryKey: ["methods"],
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/methods", { signal })),
    staleTime: Infinity,
  });
}

export function modelsQueryOptions() {
  return queryOptions({
    queryKey: ["models"],
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/models", { signal })),
    staleTime: 60_000,
  });
}
