// queryOptions factories for share links: a project's links (for its editors) and what a link shows (for anyone).
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const shareKeys = {
  all: ["shares"] as const,
  project: (projectId: number, includeInactive: boolean) => ["shares", "project", projectId, includeInactive] as const,
  shared: (token: string) => ["shared", token] as const,
};

export function projectSharesQueryOptions(projectId: number, includeInactive = false) {
  return queryOptions({
    queryKey: shareKeys.project(projectId, includeInactive),
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/projects/{project_id}/shares", {
          params: { path: { project_id: projectId }, query: { include_inactive: includeInactive } },
          signal,
        }),
      ),
  });
}

/** Read once per visit: every read counts as an opening of the link in its project's list. */
export function sharedViewQueryOptions(token: string) {
  return queryOptions({
    queryKey: shareKeys.shared(token),
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/shared/{token}", { params: { path: { token } }, signal })),
    staleTime: Infinity,
  });
}

/** While a shared page stays open, re-ask the API with the link's token (a cheap one-run list, not an "open" of the
 * link): a revoked or expired link then shows as such within 2 s, as the README promises, on a page whose runs
 * have finished as on one still streaming (the stream itself rechecks the link less often). */
export const SHARED_LINK_RECHECK_MS = 1_500;

export function sharedLinkCheckQueryOptions(token: string) {
  return queryOptions({
    queryKey: [...shareKeys.shared(token), "check"] as const,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/runs", { params: { query: { limit: 1 } }, signal })),
    refetchInterval: SHARED_LINK_RECHECK_MS,
    refetchIntervalInBackground: true,
  });
}
