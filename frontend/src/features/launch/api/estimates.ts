// queryOptions factory for the estimate of the run the launch form describes.
import { keepPreviousData, queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";

export type EstimateRequest = Schemas["EstimateCreate"];

export const estimateKeys = {
  all: ["estimates"] as const,
  of: (request: EstimateRequest) => ["estimates", request] as const,
};

export function estimateQueryOptions(request: EstimateRequest) {
  return queryOptions({
    queryKey: estimateKeys.of(request),
    queryFn: async ({ signal }) => unwrap(await api.POST("/api/v1/estimates", { body: request, signal })),
    // The same request gives the same memory figures; the queue's devices and earlier runs change slowly.
    staleTime: 30_000,
    // Keep the last estimate on screen while the next one is computed, so the panel does not flicker as one types.
    placeholderData: keepPreviousData,
  });
}
