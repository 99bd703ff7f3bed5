// Account changes by an admin: create or invite, deactivate or reactivate, admin rights, a new invitation link.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";
import { authKeys } from "../../auth";
import { projectKeys } from "../../projects";
import { userKeys } from "./queries";

/** Without a password the answer's invite_url is the only copy of the invitation link. */
export function useCreateUser() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["UserCreate"]) => unwrap(await api.POST("/api/v1/users", { body })),
    onSuccess: async (_created, body) => {
      await queryClient.invalidateQueries({ queryKey: userKeys.all });
      if (body.project_id != null) await queryClient.invalidateQueries({ queryKey: projectKeys.project(body.project_id) });
    },
  });
}

export function useUpdateUser() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ userId, update }: { userId: number; update: Schemas["UserUpdate"] }) =>
      unwrap(await api.PATCH("/api/v1/users/{user_id}", { params: { path: { user_id: userId } }, body: update })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: userKeys.all }),
  });
}

/** A fresh link for someone who has not joined yet; the previous one stops working. */
export function useReissueInvitation() {
  return useMutation({
    mutationFn: async (userId: number) =>
      unwrap(await api.POST("/api/v1/users/{user_id}/invitation", { params: { path: { user_id: userId } } })),
  });
}

/**
 * An invitation from a project's settings: the account (no password; the answer's invite_url is shown once) and, when
 * `project_id` is set, its membership. Refreshes the caller's memberships, the project's members and the accounts.
 */
export function useInviteUser(projectId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["UserCreate"]) => unwrap(await api.POST("/api/v1/users", { body })),
    onSuccess: () =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: authKeys.me }),
        queryClient.invalidateQueries({ queryKey: projectKeys.project(projectId) }),
        queryClient.invalidateQueries({ queryKey: userKeys.all }),
      ]),
  });
}
