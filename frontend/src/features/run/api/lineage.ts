// queryOptions factory for a run's lineage: the runs whose weights it builds on and the runs that started from it.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import { isFinished, runKeys } from "../../runs";

export const lineageKeys = {
  // Under the runs' keys, which every launch, rename and delete invalidates: each may change a lineage.
  run: (runId: number) => [...runKeys.all, "lineage", runId] as const,
};

export function runLineageQueryOptions(runId: number) {
  return queryOptions({
    queryKey: lineageKeys.run(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/lineage", { params: { path: { run_id: runId } }, signal })),
    // A run started from this one changes status without telling this page.
    refetchInterval: (query) => (query.state.data?.children.some((child) => !isFinished(child)) ? 10_000 : false),
  });
}
