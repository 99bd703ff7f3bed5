// queryOptions and the mutation of the playground: a run's stored samples, and a playground request.
import { queryOptions, useMutation } from "@tanstack/react-query";

import { api, unwrap, type Schemas } from "../../../api/client";

export type PlaygroundRequest = Schemas["PlaygroundCreate"];
export type PlaygroundAnswer = Schemas["PlaygroundPublic"];
export type CompletionSlot = Schemas["CompletionSlot"];
export type RunSample = Schemas["RunSamplePublic"];
export type RlSample = Schemas["RlSamplePublic"];

export const playgroundKeys = {
  samples: (runId: number) => ["samples", runId] as const,
  rlSamples: (runId: number) => ["rl-samples", runId] as const,
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

/** The completions an online RL run sampled with their rewards; read every few seconds while `live` (it trains). */
export function rlSamplesQueryOptions(runId: number, live: boolean) {
  return queryOptions({
    queryKey: playgroundKeys.rlSamples(runId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/runs/{run_id}/rl-samples", { params: { path: { run_id: runId } }, signal })),
    refetchInterval: live ? 3_000 : false,
    // Once the run ended, nothing is added.
    staleTime: live ? 0 : Infinity,
  });
}

/** Queue one prompt to the base model and the runs; the answer names the event stream of their completions. */
export function useAskPlayground() {
  return useMutation({
    mutationFn: async (body: PlaygroundRequest) => unwrap(await api.POST("/api/v1/playground", { body })),
  });
}
