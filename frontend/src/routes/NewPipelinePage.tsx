import { useQuery } from "@tanstack/react-query";

import { ErrorBox, Loading } from "../components/ui/ui";
import { canEdit } from "../features/auth/roles";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { queuesQueryOptions } from "../features/launch/api/queues";
import { PipelineForm, pipelineTemplatesQueryOptions } from "../features/pipelines";
import { methodsQueryOptions, modelsQueryOptions } from "../features/runs/api/queries";

export function NewPipelinePage() {
  const session = useSession();
  const projectId = session.projectId;
  const project = session.me.projects.find((p) => p.project_id === projectId);
  const templates = useQuery(pipelineTemplatesQueryOptions());
  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const queues = useQuery(queuesQueryOptions());
  const datasets = useQuery({ ...allDatasetsQueryOptions(projectId), enabled: projectId !== undefined });
  const error = templates.error ?? methods.error ?? models.error ?? queues.error ?? datasets.error;
  const ready = templates.data && methods.data && models.data && queues.data && datasets.data;
  const allowed = canEdit(session.roleIn(projectId));
  return (
    <>
      <h1>
        New pipeline
        {project && <span className="help page-count"> in {project.project_name}</span>}
      </h1>
      <p className="help">
        Runs that start from runs: each stage is queued when the one before it succeeds, from an earlier stage's trained
        weights; a stage that fails or is canceled cancels the rest.
      </p>
      {error && <ErrorBox error={error} />}
      {!allowed && <div className="notice">Launching a pipeline needs the editor role in the project.</div>}
      {!error && !ready && allowed && <Loading what="templates, methods, models, queues and datasets" />}
      {ready && allowed && (
        <PipelineForm
          key={projectId}
          projectId={projectId}
          templates={templates.data.data}
          catalog={{ objectives: methods.data.objectives, methods: methods.data.methods, models: models.data.data, datasets: datasets.data.data }}
          queues={queues.data.data}
        />
      )}
    </>
  );
}
