// Making and revoking share links; both show in the project's audit log.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";
import { projectKeys } from "../../projects";
import { shareKeys } from "./queries";

function useRefresh() {
  const queryClient = useQueryClient();
  return (share: Schemas["SharePublic"]) =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: shareKeys.all }),
      queryClient.invalidateQueries({ queryKey: projectKeys.audit(share.project_id) }),
    ]);
}

/**
 * What a link is made for: runs (one, or a comparison), a study (its runs, kept in step when it is extended) or a
 * pipeline (its stages' runs, those launched later too).
 */
export type ShareTarget = { runIds: readonly number[]; studyId?: number; pipelineId?: number };

export function useCreateShare(target: ShareTarget) {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: async (body: Schemas["StudyShareCreate"]) =>
      unwrap(
        target.studyId !== undefined
          ? await api.POST("/api/v1/studies/{study_id}/shares", { params: { path: { study_id: target.studyId } }, body })
          : target.pipelineId !== undefined
            ? await api.POST("/api/v1/pipelines/{pipeline_id}/shares", { params: { path: { pipeline_id: target.pipelineId } }, body })
            : await api.POST("/api/v1/shares", { body: { ...body, run_ids: [...target.runIds] } }),
      ),
    onSuccess: refresh,
  });
}

export function useRevokeShare() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: async (shareId: number) =>
      unwrap(await api.DELETE("/api/v1/shares/{share_id}", { params: { path: { share_id: shareId } } })),
    onSuccess: refresh,
  });
}
