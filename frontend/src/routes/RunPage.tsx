import { Link, useParams } from "react-router";

import { useSession } from "../features/auth/session";
import { RunActions } from "../features/run/components/RunActions";
import { RunNotFound, RunView } from "../features/run/components/RunView";
import { canEdit } from "../features/auth";
import { RunPlayground } from "../features/playground";
import { DeleteRunButton, RunLabels } from "../features/runs";

export function RunPage() {
  const { runId: param } = useParams();
  const { roleIn } = useSession();
  const runId = Number(param);
  const notFound = (label: string) => (
    <RunNotFound label={label}>
      <Link to="/">Back to the runs</Link>
    </RunNotFound>
  );
  if (!Number.isInteger(runId) || runId <= 0) return notFound(param ?? "");
  return (
    <>
      <RunView
        key={runId}
        runId={runId}
        notFound={notFound(`#${runId}`)}
        actions={(run) => (
          <>
            <RunLabels run={run} canEdit={canEdit(roleIn(run.project_id))} />
            <RunActions run={run} role={roleIn(run.project_id)} />
            {canEdit(roleIn(run.project_id)) && <DeleteRunButton run={run} />}
          </>
        )}
      />
      <RunPlayground key={`playground-${runId}`} runId={runId} />
    </>
  );
}
