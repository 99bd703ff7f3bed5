// queryOptions factories for metric series: the only source of their cache keys.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const metricKeys = {
  all: ["metrics"] as const,
  run: (runId: number, maxPoints: number) => ["metrics", "run", runId, maxPoints] as const,
  runAll: (runId: number) => ["metrics", "run", runId] as const,
  query: (runIds: readonly number[], maxPoints: number) => ["metrics", "query", [...runIds], maxPoints] as const,
};

/** Every series of one run, capped at maxPoints per series (bucketed on the server, keeping min/max/last). */
export function runMetricsQueryOptions(runId: number, maxPoints = 2000) {
  return queryOptions({
    queryKey: metricKeys.run(runId, maxPoints),
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/runs/{run_id}/metrics", {
          params: { path: { run_id: runId }, query: { max_points: maxPoints } },
          signal,
        }),
      ),
    // Live points arrive over SSE; this is read once, and again when the run ends.
    staleTime: Infinity,
  });
}

/**
 * Every series of several runs in one request. `refetchMs` re-reads it while some run is still training;
 * the page marks "tunelab:metrics-received" when the response has arrived (read by scripts/bench_ui.py).
 */
export function metricsQueryOptions(runIds: readonly number[], maxPoints = 1000, refetchMs: number | false = false) {
  return queryOptions({
    queryKey: metricKeys.query(runIds, maxPoints),
    queryFn: async ({ signal }) => {
      const data = unwrap(
        await api.POST("/api/v1/metrics/query", { body: { run_ids: [...runIds], keys: null, max_points: maxPoints }, signal }),
      );
      performance.clearMarks("tunelab:metrics-received");
      performance.mark("tunelab:metrics-received");
      return data;
    },
    enabled: runIds.length > 0,
    refetchInterval: refetchMs,
  });
}
