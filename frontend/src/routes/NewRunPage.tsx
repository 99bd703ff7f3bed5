import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { queuesQueryOptions } from "../features/launch/api/queues";
import { LaunchForm } from "../features/launch/LaunchForm";
import { canEdit } from "../features/auth/roles";
import { methodsQueryOptions, modelsQueryOptions, runQueryOptions } from "../features/runs/api/queries";

export function NewRunPage() {
  const [searchParams] = useSearchParams();
  const cloneParam = Number(searchParams.get("clone"));
  const cloneId = Number.isInteger(cloneParam) && cloneParam > 0 ? cloneParam : undefined;
  const session = useSession();

  const source = useQuery({ ...runQueryOptions(cloneId ?? 0), enabled: cloneId !== undefined });
  // A clone goes into its source's project; a new run into the project chosen in the top bar.
  const projectId = cloneId !== undefined ? source.data?.project_id : session.projectId;
  const projectKnown = cloneId === undefined || source.data !== undefined;
  const project = session.me.projects.find((p) => p.project_id === projectId);
  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const queues = useQuery(queuesQueryOptions());
  const datasets = useQuery({ ...allDatasetsQueryOptions(projectId), enabled: projectKnown && projectId !== undefined });

  const error = methods.error ?? models.error ?? queues.error ?? datasets.error ?? source.error;
  const ready = methods.data && models.data && queues.data && datasets.data && projectKnown;
  const allowed = canEdit(session.roleIn(projectId));

  return (
    <>
      <h1>
        {source.data ? `New run from ${source.data.name}` : "New run"}
        {project && <span className="help page-count"> in {project.project_name}</span>}
      </h1>
      {error && <ErrorBox error={error} />}
      {projectKnown && !allowed && (
        <div className="notice" data-testid="launch-not-allowed">
          {project
            ? `You are a ${project.role} in ${project.project_name}: launching runs needs the editor role. Ask one of its owners.`
            : "Choose or create a project to launch runs in."}
        </div>
      )}
      {!error && !ready && allowed && <Loading what="methods, models, queues and datasets" />}
      {ready && allowed && (
        <LaunchForm
          key={`${cloneId ?? "new"}:${projectId}`}
          projectId={projectId}
          catalog={{
            objectives: methods.data.objectives,
            methods: methods.data.methods,
            models: models.data.data,
            datasets: datasets.data.data,
          }}
          queues={queues.data.data}
          source={cloneId !== undefined ? source.data : undefined}
        />
      )}
    </>
  );
}
