// queryOptions factories for what belongs to one run page: its artifacts and its evaluation by generation.
import { keepPreviousData, queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const artifactKeys = {
  run: (runId: number) => ["artifacts", runId] as const,
};

export const predictionKeys = {
  page: (runId: number, offset: number, limit: number) => ["predictions", runId, offset, limit] as const,
};

/** A page of the run's evaluation by generation: `limit` rows from the offset-th, and how many there are. */
export function runPredictionsQueryOptions(runId: number, offset: number, limit: number) {
  return queryOptions({
    queryKey: predictionKeys.page(runId, offset, limit),
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/runs/{run_id}/predictions", {
          params: { path: { run_id: runId }, query: { offset, limit } },
          signal,
        }),
      ),
    // The page shown stays while the next one loads, so the pager does not jump.
    placeholderData: keepPreviousData,
  });
}

export function runArtifactsQueryOptions(runId: number) {
  return queryOptions({
    queryKey: artifactKeys.run(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/artifacts", { params: { path: { run_id: runId } }, signal })),
  });
}
