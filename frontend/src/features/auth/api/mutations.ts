// Signing in, up and out. Whoever was signed in before, nothing of their cache may outlive the change.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";

function useFreshStart() {
  const queryClient = useQueryClient();
  return () => queryClient.removeQueries();
}

export function useSignIn() {
  const freshStart = useFreshStart();
  return useMutation({
    mutationFn: async (body: Schemas["SignIn"]) => unwrap(await api.POST("/api/v1/auth/sign-in", { body })),
    onSuccess: freshStart,
  });
}

export function useSignUp() {
  const freshStart = useFreshStart();
  return useMutation({
    mutationFn: async (body: Schemas["SignUp"]) => unwrap(await api.POST("/api/v1/auth/sign-up", { body })),
    onSuccess: freshStart,
  });
}

export function useCreateFirstAdmin() {
  const freshStart = useFreshStart();
  return useMutation({
    mutationFn: async (body: Schemas["FirstAdminCreate"]) => unwrap(await api.POST("/api/v1/auth/first-admin", { body })),
    onSuccess: freshStart,
  });
}

export function useAcceptInvite() {
  const freshStart = useFreshStart();
  return useMutation({
    mutationFn: async (body: Schemas["InviteAccept"]) => unwrap(await api.POST("/api/v1/auth/invites/accept", { body })),
    onSuccess: freshStart,
  });
}

export function useSignOut() {
  return useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/v1/auth/sign-out")),
  });
}
