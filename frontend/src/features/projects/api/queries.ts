// queryOptions factories for a project's members and audit log (its share links: features/shares).
import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

const AUDIT_PAGE = 50;

export const projectKeys = {
  all: ["projects"] as const,
  project: (projectId: number) => ["projects", projectId] as const,
  members: (projectId: number) => ["projects", projectId, "members"] as const,
  audit: (projectId: number) => ["projects", projectId, "audit"] as const,
};

export function membersQueryOptions(projectId: number) {
  return queryOptions({
    queryKey: projectKeys.members(projectId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/projects/{project_id}/members", { params: { path: { project_id: projectId } }, signal })),
  });
}

/** Newest first; each "Older" page continues before the last event shown. */
export function auditQueryOptions(projectId: number) {
  return infiniteQueryOptions({
    queryKey: projectKeys.audit(projectId),
    queryFn: async ({ pageParam, signal }) =>
      unwrap(
        await api.GET("/api/v1/projects/{project_id}/audit", {
          params: { path: { project_id: projectId }, query: { limit: AUDIT_PAGE, before: pageParam } },
          signal,
        }),
      ),
    initialPageParam: null as number | null,
    getNextPageParam: (last) => last.next_before ?? undefined,
  });
}
