// queryOptions and the mutation of the playground: a run's stored samples, and a playground request.
import { queryOptions, useMutation } from "@tanstack/react-query";

import { api, unwrap, type Schemas } from "../../../api/client";

export type PlaygroundRequest = Schemas["PlaygroundCreate"];
export type PlaygroundAnswer = Schemas["PlaygroundPublic"];
export type CompletionSlot = Schemas["CompletionSlot"];
export type RunSample = Schemas["RunSamplePublic"];

export const playgroundKeys = {
  samples: (runId: number) => ["samples", runId] as const,
};

export function runSamplesQueryOptions(runId: number) {
  return queryOptions({
    queryKey: playgroundKeys.samples(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/samples", { params: { path: { run_id: runId } }, signal })),
    // Written once, when the run's training ends.
    staleTime: Infinity,
  });
}

/** Queue one prompt to the base model and the runs; the answer names the event stream of their completions. */
export function useAskPlayground() {
  return useMutation({
    mutationFn: async (body: PlaygroundRequest) => unwrap(await api.POST("/api/v1/playground", { body })),
  });
}
