// Below a run page: its stored samples, an online RL run's sampled completions, and for an editor of a succeeded run
// the playground on it and its base.
import { useQueries, useQuery } from "@tanstack/react-query";

import type { Run } from "../../../api/client";
import { canEdit, useSession } from "../../auth";
import { runQueryOptions } from "../../runs";
import { PlaygroundPanel } from "./PlaygroundPanel";
import { RlSamplesTable } from "./RlSamplesTable";
import { SamplesTable } from "./SamplesTable";

export function RunPlayground({ runId }: { runId: number }) {
  const run = useQuery(runQueryOptions(runId)).data;
  return (
    <>
      <SamplesTable runId={runId} />
      <RlSamplesTable runId={runId} />
      {run && <EditorsPlayground runs={[run]} />}
    </>
  );
}

/** The playground on the compare page: the runs shown that succeeded, when the caller edits their one project. */
export function ComparePlayground({ runIds }: { runIds: number[] }) {
  const runs = useQueries({ queries: runIds.map((id) => runQueryOptions(id)) })
    .map((query) => query.data)
    .filter((run): run is Run => run !== undefined);
  return <EditorsPlayground runs={runs} />;
}

function EditorsPlayground({ runs }: { runs: Run[] }) {
  const { roleIn } = useSession();
  const succeeded = runs.filter((run) => run.status === "succeeded");
  const projectIds = new Set(succeeded.map((run) => run.project_id));
  if (succeeded.length === 0 || projectIds.size !== 1) return null;
  const projectId = succeeded[0].project_id;
  if (!canEdit(roleIn(projectId))) return null;
  return <PlaygroundPanel projectId={projectId} runs={succeeded.slice(0, 6)} />;
}
