import { useQuery } from "@tanstack/react-query";
import { useNavigate, useParams } from "react-router";

import { canEdit, useSession } from "../features/auth";
import { PipelineView, pipelineQueryOptions } from "../features/pipelines";
import { NotFoundPage } from "./NotFoundPage";

export function PipelinePage() {
  const { pipelineId = "" } = useParams();
  const id = Number(pipelineId);
  if (!Number.isInteger(id) || id < 1) return <NotFoundPage />;
  return <ValidPipelinePage key={id} id={id} />;
}

function ValidPipelinePage({ id }: { id: number }) {
  const navigate = useNavigate();
  const { roleIn } = useSession();
  const projectId = useQuery(pipelineQueryOptions(id)).data?.project_id;
  // A viewer follows the pipeline; Cancel, Clone, Share and Delete are an editor's.
  const canChange = projectId !== undefined && canEdit(roleIn(projectId));
  return (
    <PipelineView pipelineId={id} canChange={canChange} onCloned={(clone) => navigate(`/pipelines/${clone}`)} onDeleted={() => navigate("/pipelines")} />
  );
}
