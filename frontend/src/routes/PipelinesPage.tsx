import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useNavigate } from "react-router";

import { EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { canEdit } from "../features/auth/roles";
import { useSession } from "../features/auth/session";
import { MAX_COMPARE_RUNS, formatSelection } from "../features/compare/selection";
import { StageStatusBadge, chainText, finalRunIds, pipelinesQueryOptions } from "../features/pipelines";
import { formatDateTime } from "../lib/format";

export function PipelinesPage() {
  const session = useSession();
  const navigate = useNavigate();
  const pipelines = useQuery(pipelinesQueryOptions(session.projectId));
  const [picked, setPicked] = useState<Set<number>>(() => new Set());
  const list = pipelines.data?.data ?? [];
  const runIds = finalRunIds(list, picked);
  const toggle = (id: number, on: boolean) =>
    setPicked((current) => {
      const next = new Set(current);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  return (
    <>
      <div className="page-title">
        <h1>Pipelines</h1>
        <div className="card-actions">
          <button
            type="button"
            disabled={runIds.length === 0 || runIds.length > MAX_COMPARE_RUNS}
            title={runIds.length > MAX_COMPARE_RUNS ? `At most ${MAX_COMPARE_RUNS} runs can be compared` : "Compare the last stage's run of each selected pipeline"}
            onClick={() => navigate(`/compare?runs=${formatSelection(runIds)}`)}
          >
            Compare final stages ({runIds.length})
          </button>
          {canEdit(session.roleIn(session.projectId)) && (
            <Link className="button primary" to="/pipelines/new">
              New pipeline
            </Link>
          )}
        </div>
      </div>
      {pipelines.isPending && <Loading what="pipelines" />}
      {pipelines.error && <ErrorBox error={pipelines.error} />}
      {pipelines.data && list.length === 0 && (
        <EmptyState title="No pipelines yet">
          <p>A pipeline chains runs: each stage starts from an earlier stage's weights (SFT → reward model → GRPO).</p>
        </EmptyState>
      )}
      {list.length > 0 && (
        <table className="table pipelines-table" aria-label="Pipelines">
          <thead>
            <tr>
              <th>
                <span className="visually-hidden">Select</span>
              </th>
              <th>Name</th>
              <th>Status</th>
              <th>Stages</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {list.map((pipeline) => (
              <tr key={pipeline.id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${pipeline.name}`}
                    checked={picked.has(pipeline.id)}
                    disabled={pipeline.final_run_id === null}
                    title={pipeline.final_run_id === null ? "Its last stage has not started yet" : undefined}
                    onChange={(e) => toggle(pipeline.id, e.target.checked)}
                  />
                </td>
                <td>
                  <Link to={`/pipelines/${pipeline.id}`}>{pipeline.name}</Link>
                </td>
                <td>
                  <StageStatusBadge status={pipeline.status} />
                </td>
                <td>
                  {chainText(pipeline.spec.stages)}
                  {pipeline.current_stage !== null && (
                    <span className="help"> · stage {pipeline.current_stage + 1} of {pipeline.stage_count}</span>
                  )}
                </td>
                <td>{formatDateTime(pipeline.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
