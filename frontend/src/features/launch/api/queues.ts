// queryOptions factory for the training queues the server declares, each with the workers seen on it.
import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";

export function queuesQueryOptions() {
  return queryOptions({
    queryKey: ["queues"],
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/queues", { signal })),
    // The declared queues change only with a restart; the worker counts are worth refreshing now and then.
    staleTime: 15_000,
  });
}
