import { useQuery } from "@tanstack/react-query";

import { ErrorBox, Loading } from "../components/ui/ui";
import { canEdit } from "../features/auth/roles";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { queuesQueryOptions } from "../features/launch/api/queues";
import { queueLabel } from "../features/launch/launchChoice";
import { methodsQueryOptions, modelsQueryOptions } from "../features/runs/api/queries";
import { StudyForm } from "../features/studies";

export function NewStudyPage() {
  const session = useSession();
  const projectId = session.projectId;
  const project = session.me.projects.find((p) => p.project_id === projectId);
  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const queues = useQuery(queuesQueryOptions());
  const datasets = useQuery({ ...allDatasetsQueryOptions(projectId), enabled: projectId !== undefined });
  const error = methods.error ?? models.error ?? queues.error ?? datasets.error;
  const ready = methods.data && models.data && queues.data && datasets.data;
  const allowed = canEdit(session.roleIn(projectId));
  return (
    <>
      <h1>
        New study
        {project && <span className="help page-count"> in {project.project_name}</span>}
      </h1>
      <p className="help">
        Several methods on one base model and dataset, trained with the same budget, eval split and seeds, then
        compared on a fair cost table.
      </p>
      {error && <ErrorBox error={error} />}
      {!allowed && (
        <div className="notice" data-testid="launch-not-allowed">
          Launching a study needs the editor role in the project.
        </div>
      )}
      {!error && !ready && allowed && <Loading what="methods, models, queues and datasets" />}
      {ready && allowed && (
        <StudyForm
          key={projectId}
          projectId={projectId}
          catalog={{ objectives: methods.data.objectives, methods: methods.data.methods, models: models.data.data, datasets: datasets.data.data }}
          // Labelled as the run launch form labels them: name, workers seen now, default.
          queues={queues.data.data.map((queue) => ({ ...queue, label: queueLabel(queue) }))}
        />
      )}
    </>
  );
}
