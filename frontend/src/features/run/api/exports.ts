// queryOptions and the mutation for a run's merged-model exports.
import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import { exportInProgress } from "../export";
import { artifactKeys } from "./queries";

const EXPORT_POLL_MS = 2000;

export const exportKeys = {
  run: (runId: number) => ["exports", runId] as const,
};

export function runExportsQueryOptions(runId: number) {
  return queryOptions({
    queryKey: exportKeys.run(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/exports", { params: { path: { run_id: runId } }, signal })),
    // Polled while the newest export is on its way: a worker moves it, and no event stream carries it.
    refetchInterval: (query) => (exportInProgress(query.state.data?.data[0]) ? EXPORT_POLL_MS : false),
  });
}

/** Ask a worker to merge the run's adapter into its base (merged/ in its artifacts). */
export function useExportMerged(runId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.POST("/api/v1/runs/{run_id}/exports", { params: { path: { run_id: runId } } })),
    onSettled: () =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: exportKeys.run(runId) }),
        queryClient.invalidateQueries({ queryKey: artifactKeys.run(runId) }),
      ]),
  });
}
