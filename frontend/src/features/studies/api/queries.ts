// queryOptions factories and mutations for studies: the only source of their cache keys.
import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";

export type StudyDetail = Schemas["StudyDetailPublic"];
export type StudyCreate = Schemas["StudyCreate"];
export type CostTable = Schemas["CostTablePublic"];

export const studyKeys = {
  all: ["studies"] as const,
  list: (projectId: number | undefined) => ["studies", "list", projectId ?? null] as const,
  detail: (studyId: number) => ["studies", "detail", studyId] as const,
};

export function studiesQueryOptions(projectId: number | undefined) {
  return queryOptions({
    queryKey: studyKeys.list(projectId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/studies", { params: { query: { project_id: projectId, limit: 200 } }, signal })),
  });
}

const FINISHED = new Set(["succeeded", "failed", "canceled"]);

/** The study, its runs and the server's cost table; re-read every `refetchMs` while one of its runs is not finished. */
export function studyQueryOptions(studyId: number, refetchMs = 3_000) {
  return queryOptions({
    queryKey: studyKeys.detail(studyId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/studies/{study_id}", { params: { path: { study_id: studyId } }, signal })),
    refetchInterval: (query) =>
      query.state.data?.runs.some((run) => !FINISHED.has(run.status)) ? refetchMs : false,
  });
}

export function useCreateStudy() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: StudyCreate) => unwrap(await api.POST("/api/v1/studies", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: studyKeys.all }),
  });
}

export function useExtendStudy(studyId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["StudyExtend"]) =>
      unwrap(await api.POST("/api/v1/studies/{study_id}/runs", { params: { path: { study_id: studyId } }, body })),
    onSuccess: (detail) => queryClient.setQueryData(studyKeys.detail(studyId), detail),
  });
}

export function useCloneStudy(studyId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (name: string | null) =>
      unwrap(
        await api.POST("/api/v1/studies/{study_id}/clone", { params: { path: { study_id: studyId } }, body: { name } }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: studyKeys.all }),
  });
}

/** Delete the study (its share links revoked); its runs are kept unless `withRuns`. */
export function useDeleteStudy(studyId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (withRuns: boolean) =>
      unwrap(await api.DELETE("/api/v1/studies/{study_id}", { params: { path: { study_id: studyId }, query: { with_runs: withRuns } } })),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: studyKeys.detail(studyId) });
      return Promise.all([queryClient.invalidateQueries({ queryKey: studyKeys.all }), queryClient.invalidateQueries({ queryKey: ["runs"] })]);
    },
  });
}

/** The fair cost table of any runs (the compare view): cells are method × the params that differ. */
export function costTableQueryOptions(runIds: readonly number[], refetchMs: number | false = false) {
  return queryOptions({
    queryKey: ["cost-table", [...runIds]] as const,
    queryFn: async ({ signal }) =>
      unwrap(await api.POST("/api/v1/cost-table", { body: { run_ids: [...runIds], target_loss: null }, signal })),
    refetchInterval: refetchMs,
  });
}
