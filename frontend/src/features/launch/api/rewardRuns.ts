// queryOptions factory for the runs a launch may name as its reward model: a project's succeeded runs of one objective.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import { runKeys } from "../../runs";

/** The most reward runs offered: GET /runs answers at most 200 a page, and the newest come first. */
const REWARD_RUNS = 200;

export function rewardRunsQueryOptions(projectId: number | undefined, objective: string) {
  const query = { project_id: projectId, objective, status: ["succeeded" as const], limit: REWARD_RUNS };
  return queryOptions({
    // Under runKeys.all, so a launched, canceled or deleted run refreshes the list with every other run list.
    queryKey: [...runKeys.all, "reward-candidates", query] as const,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/runs", { params: { query }, signal })),
    // A succeeded run stays succeeded; new ones arrive with the invalidation above.
    staleTime: 60_000,
  });
}
