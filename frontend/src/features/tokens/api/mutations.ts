// Creating (the secret is in this answer only) and revoking API tokens.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";
import { tokenKeys } from "./queries";

export function useCreateApiToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["ApiTokenCreate"]) => unwrap(await api.POST("/api/v1/auth/tokens", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: tokenKeys.all }),
  });
}

export function useRevokeApiToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (tokenId: number) =>
      unwrap(await api.DELETE("/api/v1/auth/tokens/{token_id}", { params: { path: { token_id: tokenId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: tokenKeys.all }),
  });
}
