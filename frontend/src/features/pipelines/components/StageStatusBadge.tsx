import type { PipelineDetail, Stage } from "../api/queries";

/** A pipeline's or a stage's status, styled as a run's (waiting and deleted are a stage's own). */
export function StageStatusBadge({ status }: { status: Stage["status"] | PipelineDetail["status"] }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}
