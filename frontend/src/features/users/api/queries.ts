// queryOptions factories for the install's accounts (admins only).
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export const userKeys = {
  all: ["users"] as const,
};

export function usersQueryOptions() {
  return queryOptions({
    queryKey: userKeys.all,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/users", { signal })),
  });
}
