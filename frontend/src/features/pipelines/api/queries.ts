// queryOptions factories and mutations for pipelines: the only source of their cache keys.
import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";

export type Pipeline = Schemas["PipelinePublic"];
export type PipelineDetail = Schemas["PipelineDetailPublic"];
export type PipelineCreate = Schemas["PipelineCreate"];
export type PipelineTemplate = Schemas["PipelineTemplatePublic"];
export type StageTemplate = Schemas["StageTemplatePublic"];
export type Stage = Schemas["StagePublic"];
export type StageSpec = Schemas["StageSpec"];

export const pipelineKeys = {
  all: ["pipelines"] as const,
  templates: ["pipeline-templates"] as const,
  list: (projectId: number | undefined) => ["pipelines", "list", projectId ?? null] as const,
  detail: (pipelineId: number) => ["pipelines", "detail", pipelineId] as const,
};

/** A pipeline still moving: a stage queued or running, or one waiting for it. */
export function isActive(pipeline: Pick<Pipeline, "status">): boolean {
  return pipeline.status === "queued" || pipeline.status === "running";
}

export function pipelineTemplatesQueryOptions() {
  return queryOptions({
    queryKey: pipelineKeys.templates,
    queryFn: async ({ signal }) => unwrap(await api.GET("/api/v1/pipeline-templates", { signal })),
    staleTime: Infinity,
  });
}

/** The project's pipelines, newest first; re-read every `refetchMs` while one of them is still moving. */
export function pipelinesQueryOptions(projectId: number | undefined, refetchMs = 3_000) {
  return queryOptions({
    queryKey: pipelineKeys.list(projectId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/pipelines", { params: { query: { project_id: projectId, limit: 200 } }, signal })),
    refetchInterval: (query) => (query.state.data?.data.some(isActive) ? refetchMs : false),
  });
}

/** The pipeline and its stages; re-read every `refetchMs` while a stage is queued or running (or waits for one). */
export function pipelineQueryOptions(pipelineId: number, refetchMs = 2_000) {
  return queryOptions({
    queryKey: pipelineKeys.detail(pipelineId),
    queryFn: async ({ signal }) =>
      unwrap(await api.GET("/api/v1/pipelines/{pipeline_id}", { params: { path: { pipeline_id: pipelineId } }, signal })),
    refetchInterval: (query) => (query.state.data && isActive(query.state.data) ? refetchMs : false),
  });
}

export function useCreatePipeline() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: PipelineCreate) => unwrap(await api.POST("/api/v1/pipelines", { body })),
    onSuccess: (detail) => {
      queryClient.setQueryData(pipelineKeys.detail(detail.id), detail);
      return queryClient.invalidateQueries({ queryKey: pipelineKeys.all });
    },
  });
}

/** Cancel the stage queued or running and every stage after it. */
export function useCancelPipeline(pipelineId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.POST("/api/v1/pipelines/{pipeline_id}/cancel", { params: { path: { pipeline_id: pipelineId } } })),
    onSuccess: (detail) => {
      queryClient.setQueryData(pipelineKeys.detail(pipelineId), detail);
      return Promise.all([queryClient.invalidateQueries({ queryKey: pipelineKeys.all }), queryClient.invalidateQueries({ queryKey: ["runs"] })]);
    },
  });
}

export function useClonePipeline(pipelineId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.POST("/api/v1/pipelines/{pipeline_id}/clone", { params: { path: { pipeline_id: pipelineId } }, body: {} })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: pipelineKeys.all }),
  });
}

/** Delete the pipeline (its share links revoked, its stages not yet launched dropped); its runs are kept. */
export function useDeletePipeline(pipelineId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE("/api/v1/pipelines/{pipeline_id}", { params: { path: { pipeline_id: pipelineId } } })),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: pipelineKeys.detail(pipelineId) });
      return queryClient.invalidateQueries({ queryKey: pipelineKeys.all });
    },
  });
}
