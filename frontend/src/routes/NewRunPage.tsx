import { useQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { queuesQueryOptions } from "../features/launch/api/queues";
import { LaunchForm } from "../features/launch/LaunchForm";
import { baseRunRefusal } from "../features/launch/launchChoice";
import { canEdit } from "../features/auth/roles";
import { methodsQueryOptions, modelsQueryOptions, runQueryOptions } from "../features/runs/api/queries";

function runIdParam(value: string | null): number | undefined {
  const id = Number(value);
  return value !== null && Number.isInteger(id) && id > 0 ? id : undefined;
}

export function NewRunPage() {
  const [searchParams] = useSearchParams();
  const cloneId = runIdParam(searchParams.get("clone"));
  // `?base_run=ID`: continue from that run's weights. A clone starts from what its source started from.
  const continueId = cloneId === undefined ? runIdParam(searchParams.get("base_run")) : undefined;
  const session = useSession();

  const source = useQuery({ ...runQueryOptions(cloneId ?? 0), enabled: cloneId !== undefined });
  const baseId = continueId ?? source.data?.base_run_id ?? undefined;
  const base = useQuery({ ...runQueryOptions(baseId ?? 0), enabled: baseId !== undefined });
  // A clone goes into its source's project, a continuation into its base run's; a new run into the project chosen in
  // the top bar.
  const projectId = cloneId !== undefined ? source.data?.project_id : continueId !== undefined ? base.data?.project_id : session.projectId;
  const projectKnown = (cloneId === undefined || source.data !== undefined) && (continueId === undefined || base.data !== undefined);
  const baseKnown = baseId === undefined ? projectKnown : base.data !== undefined;
  const project = session.me.projects.find((p) => p.project_id === projectId);
  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const queues = useQuery(queuesQueryOptions());
  const datasets = useQuery({ ...allDatasetsQueryOptions(projectId), enabled: projectKnown && projectId !== undefined });

  const error = methods.error ?? models.error ?? queues.error ?? datasets.error ?? source.error ?? base.error;
  const ready = methods.data && models.data && queues.data && datasets.data && projectKnown && baseKnown;
  const allowed = canEdit(session.roleIn(projectId));
  const refusal = base.data ? baseRunRefusal(base.data) : null;

  return (
    <>
      <h1>
        {continueId !== undefined && base.data
          ? `Continue from ${base.data.name}`
          : source.data
            ? `New run from ${source.data.name}`
            : "New run"}
        {project && <span className="help page-count"> in {project.project_name}</span>}
      </h1>
      {error && <ErrorBox error={error} />}
      {refusal && base.data && (
        <div className="notice" role="alert" data-testid="base-run-refused">
          {refusal} <Link to={`/runs/${base.data.id}`}>Back to the run</Link>
        </div>
      )}
      {projectKnown && !allowed && !refusal && (
        <div className="notice" data-testid="launch-not-allowed">
          {project
            ? `You are a ${project.role} in ${project.project_name}: launching runs needs the editor role. Ask one of its owners.`
            : "Choose or create a project to launch runs in."}
        </div>
      )}
      {!error && !ready && (allowed || !projectKnown) && !refusal && <Loading what="methods, models, queues and datasets" />}
      {ready && allowed && !refusal && (
        <LaunchForm
          key={`${cloneId ?? "new"}:${baseId ?? "bare"}:${projectId}`}
          projectId={projectId}
          catalog={{
            objectives: methods.data.objectives,
            methods: methods.data.methods,
            models: models.data.data,
            datasets: datasets.data.data,
          }}
          queues={queues.data.data}
          source={cloneId !== undefined ? source.data : undefined}
          baseRun={baseId !== undefined ? base.data : undefined}
        />
      )}
    </>
  );
}
