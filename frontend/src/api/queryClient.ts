// One place for the query defaults: the signed-in app and each shared page (its own cache) use them.
import { QueryClient } from "@tanstack/react-query";

import { shouldRetry } from "./client";

export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: { queries: { staleTime: 2_000, retry: shouldRetry, refetchOnWindowFocus: false } },
  });
}
