// queryOptions factories for the caller's API tokens.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const tokenKeys = {
  all: ["api-tokens"] as const,
};

export function apiTokensQueryOptions() {
  return queryOptions({
    queryKey: tokenKeys.all,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/auth/tokens", { signal })),
  });
}
