// Project and member changes. Each refreshes the caller's memberships (the switcher, roles) and the audit log.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Role, Schemas } from "../../../api/client";
import { authKeys } from "../../auth";
import { datasetKeys } from "../../datasets";
import { runKeys } from "../../runs";
import { projectKeys } from "./queries";

function useRefresh(projectId?: number) {
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: authKeys.me }),
      queryClient.invalidateQueries({ queryKey: projectId === undefined ? projectKeys.all : projectKeys.project(projectId) }),
    ]);
}

export function useCreateProject() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: async (body: Schemas["ProjectCreate"]) => unwrap(await api.POST("/api/v1/projects", { body })),
    onSuccess: refresh,
  });
}

export function useRenameProject(projectId: number) {
  const refresh = useRefresh(projectId);
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.PATCH("/api/v1/projects/{project_id}", { params: { path: { project_id: projectId } }, body: { name } })),
    onSuccess: refresh,
  });
}

export function useDeleteProject(projectId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE("/api/v1/projects/{project_id}", { params: { path: { project_id: projectId } } })),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: projectKeys.project(projectId) });
      return Promise.all([
        queryClient.invalidateQueries({ queryKey: authKeys.me }),
        queryClient.invalidateQueries({ queryKey: runKeys.all }),
        queryClient.invalidateQueries({ queryKey: datasetKeys.all }),
      ]);
    },
  });
}

export function useAddMember(projectId: number) {
  const refresh = useRefresh(projectId);
  return useMutation({
    mutationFn: async (body: Schemas["MemberCreate"]) =>
      unwrap(await api.POST("/api/v1/projects/{project_id}/members", { params: { path: { project_id: projectId } }, body })),
    onSuccess: refresh,
  });
}

export function useChangeMemberRole(projectId: number) {
  const refresh = useRefresh(projectId);
  return useMutation({
    mutationFn: async ({ userId, role }: { userId: number; role: Role }) =>
      unwrap(
        await api.PATCH("/api/v1/projects/{project_id}/members/{user_id}", {
          params: { path: { project_id: projectId, user_id: userId } },
          body: { role },
        }),
      ),
    onSuccess: refresh,
  });
}

export function useRemoveMember(projectId: number) {
  const refresh = useRefresh(projectId);
  return useMutation({
    mutationFn: async (userId: number) =>
      unwrap(
        await api.DELETE("/api/v1/projects/{project_id}/members/{user_id}", {
          params: { path: { project_id: projectId, user_id: userId } },
        }),
      ),
    onSuccess: refresh,
  });
}
