// queryOptions factories for what belongs to one run page: its artifacts.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const artifactKeys = {
  run: (runId: number) => ["artifacts", runId] as const,
};

export function runArtifactsQueryOptions(runId: number) {
  return queryOptions({
    queryKey: artifactKeys.run(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/artifacts", { params: { path: { run_id: runId } }, signal })),
  });
}
