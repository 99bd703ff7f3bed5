import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate, useParams } from "react-router";

import type { Run } from "../api/client";
import { canEdit, useSession } from "../features/auth";
import { PlaygroundPanel } from "../features/playground";
import { StudyView, studyQueryOptions } from "../features/studies";
import { NotFoundPage } from "./NotFoundPage";

/** The playground takes the base and at most this many runs (one column each). */
const MAX_PLAYGROUND_RUNS = 6;

export function StudyPage() {
  const { studyId = "" } = useParams();
  const id = Number(studyId);
  if (!Number.isInteger(id) || id < 1) return <NotFoundPage />;
  return <ValidStudyPage key={id} id={id} />;
}

function ValidStudyPage({ id }: { id: number }) {
  const navigate = useNavigate();
  const { roleIn } = useSession();
  const projectId = useQuery(studyQueryOptions(id)).data?.study.project_id;
  // A viewer reads the study; Share, Clone, Extend and Delete are an editor's.
  const canChange = projectId !== undefined && canEdit(roleIn(projectId));
  return (
    <>
      <StudyView studyId={id} canChange={canChange} onCloned={(clone) => navigate(`/studies/${clone}`)} onDeleted={() => navigate("/studies")} />
      <StudyPlayground studyId={id} />
    </>
  );
}

/**
 * The playground below a study, for its editors once runs have succeeded: the base and one column per chosen run,
 * by default the first succeeded seed of each cell (a cell's seeds differ by noise, its cells by what was tried).
 */
function StudyPlayground({ studyId }: { studyId: number }) {
  const detail = useQuery(studyQueryOptions(studyId)).data;
  const { roleIn } = useSession();
  const [picked, setPicked] = useState<number[] | null>(null);
  if (!detail) return null;
  const succeeded = new Map(detail.runs.filter((run) => run.status === "succeeded").map((run) => [run.id, run]));
  const first = succeeded.values().next().value;
  if (!first || !canEdit(roleIn(first.project_id))) return null;
  const cellOf = new Map(detail.cost_table.rows.flatMap((row) => row.run_ids.map((runId) => [runId, row.cell] as const)));
  const perCell = detail.cost_table.rows
    .flatMap((row) => row.run_ids.filter((runId) => succeeded.has(runId)).slice(0, 1))
    .slice(0, MAX_PLAYGROUND_RUNS);
  const chosenIds = (picked ?? perCell).filter((runId) => succeeded.has(runId));
  const chosen = chosenIds.map((runId) => succeeded.get(runId)).filter((run): run is Run => run !== undefined);
  const toggle = (runId: number, on: boolean) =>
    setPicked(on ? [...chosenIds, runId].slice(0, MAX_PLAYGROUND_RUNS) : chosenIds.filter((other) => other !== runId));
  return (
    <div className="study-playground" data-testid="study-playground">
      <section className="card study-playground-runs" role="group" aria-labelledby="study-playground-runs-title" data-testid="study-playground-runs">
        <strong id="study-playground-runs-title">Runs in the playground (up to {MAX_PLAYGROUND_RUNS}, beside the base model)</strong>
        {[...succeeded.values()].map((run) => (
          <label key={run.id} className="checkbox-label">
            <input
              type="checkbox"
              value={run.id}
              checked={chosenIds.includes(run.id)}
              disabled={!chosenIds.includes(run.id) && chosenIds.length >= MAX_PLAYGROUND_RUNS}
              onChange={(e) => toggle(run.id, e.target.checked)}
            />
            {cellOf.get(run.id) ?? run.method} · seed {run.seed}
          </label>
        ))}
      </section>
      {chosen.length > 0 && <PlaygroundPanel key={chosenIds.join(",")} projectId={first.project_id} runs={chosen} />}
    </div>
  );
}
