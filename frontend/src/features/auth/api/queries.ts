// queryOptions factories for the account: the install's setup state, the caller, an invitation.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const authKeys = {
  all: ["auth"] as const,
  setup: ["auth", "setup"] as const,
  me: ["auth", "me"] as const,
  invite: (token: string) => ["auth", "invite", token] as const,
};

/** Whether this install still needs its first admin, and whether anyone may sign up. */
export function setupQueryOptions() {
  return queryOptions({
    queryKey: authKeys.setup,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/auth/setup", { signal })),
    staleTime: 60_000,
  });
}

/** The signed-in user and their projects with a role in each; 401 AUTH_REQUIRED when nobody is signed in. */
export function meQueryOptions() {
  return queryOptions({
    queryKey: authKeys.me,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/auth/me", { signal })),
    staleTime: 30_000,
  });
}

export function inviteQueryOptions(token: string) {
  return queryOptions({
    queryKey: authKeys.invite(token),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/auth/invites/{token}", { params: { path: { token } }, signal })),
    staleTime: Infinity,
  });
}
