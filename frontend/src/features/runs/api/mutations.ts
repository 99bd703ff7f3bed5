// Run mutations: each invalidates the run caches it changes, using the keys from queries.ts.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";
import { runKeys } from "./queries";

export function useCreateRun() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["RunCreate"]) => unwrap(await api.POST("/api/v1/runs", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: runKeys.all }),
  });
}

/** Cancel a run (it stops at its next step, keeping a checkpoint); `force` kills its training process instead. */
export function useCancelRun() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ runId, force = false }: { runId: number; force?: boolean }) =>
      unwrap(
        await api.POST("/api/v1/runs/{run_id}/cancel", { params: { path: { run_id: runId }, query: { force } } }),
      ),
    onSuccess: (run) => {
      queryClient.setQueryData(runKeys.detail(run.id), run);
      return queryClient.invalidateQueries({ queryKey: runKeys.all });
    },
  });
}

/** Queue a failed or canceled run again: it continues from its newest checkpoint. */
export function useResumeRun() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (runId: number) =>
      unwrap(await api.POST("/api/v1/runs/{run_id}/resume", { params: { path: { run_id: runId } } })),
    onSuccess: (run) => {
      queryClient.setQueryData(runKeys.detail(run.id), run);
      return queryClient.invalidateQueries({ queryKey: runKeys.all });
    },
  });
}

/** Rename a run, set its notes or replace its tags (fields left out stay as they are). */
export function useUpdateRun() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ runId, body }: { runId: number; body: Schemas["RunUpdate"] }) =>
      unwrap(await api.PATCH("/api/v1/runs/{run_id}", { params: { path: { run_id: runId } }, body })),
    onSuccess: (run) => {
      queryClient.setQueryData(runKeys.detail(run.id), run);
      return queryClient.invalidateQueries({ queryKey: runKeys.all });
    },
  });
}

/** Tag, untag, cancel or delete many runs: all of them, or none when one cannot take it. */
export function useBulkRunAction() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["RunsBulkAction"]) => unwrap(await api.POST("/api/v1/runs/bulk", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: runKeys.all }),
  });
}

/** Delete a finished run with its metrics and artifacts. */
export function useDeleteRun() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (runId: number) =>
      unwrap(await api.DELETE("/api/v1/runs/{run_id}", { params: { path: { run_id: runId } } })),
    onSuccess: (_, runId) => {
      queryClient.removeQueries({ queryKey: runKeys.detail(runId) });
      return queryClient.invalidateQueries({ queryKey: runKeys.all });
    },
  });
}
