// A pipeline's page: its stages as a chain, each with its status, why it stopped, its run and the figures it is
// judged by (losses; a reward model's accuracy; an online RL stage's reward curve). The pipeline page and a shared
// pipeline show the same view; a shared one is read-only. It re-reads itself while a stage is queued or running.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ErrorBox, Loading } from "../../../components/ui/ui";
import { formatDateTime, formatNumber } from "../../../lib/format";
import { useComparedMetrics } from "../../metrics";
import { methodsQueryOptions } from "../../runs";
import { ShareDialog } from "../../shares";
import {
  isActive,
  pipelineQueryOptions,
  useCancelPipeline,
  useClonePipeline,
  useDeletePipeline,
  type PipelineDetail,
  type Stage,
} from "../api/queries";
import { rewardedByText, stageLabel, startsFromText } from "../stages";
import { RewardChart } from "./RewardChart";
import { StageStatusBadge } from "./StageStatusBadge";

const REWARD_KEY = "train/reward";
const MAX_POINTS = 500;
const LIVE_REFRESH_MS = 3_000;

type PipelineViewProps = {
  pipelineId: number;
  /** A shared pipeline: no links into the app and no actions. */
  readOnly?: boolean;
  /** The caller may change the pipeline (an editor of its project): Cancel, Clone, Share and Delete. */
  canChange?: boolean;
  onCloned?: (id: number) => void;
  onDeleted?: () => void;
};

export function PipelineView({ pipelineId, readOnly = false, canChange = true, onCloned, onDeleted }: PipelineViewProps) {
  const pipeline = useQuery(pipelineQueryOptions(pipelineId));
  if (pipeline.isPending) return <Loading what="the pipeline" />;
  if (pipeline.error) return <ErrorBox error={pipeline.error} />;
  return <PipelineContent detail={pipeline.data} readOnly={readOnly} canChange={canChange} onCloned={onCloned} onDeleted={onDeleted} />;
}

type ContentProps = Omit<PipelineViewProps, "pipelineId"> & { detail: PipelineDetail; readOnly: boolean; canChange: boolean };

function PipelineContent({ detail, readOnly, canChange, onCloned, onDeleted }: ContentProps) {
  const methods = useQuery(methodsQueryOptions());
  // The online RL stages (an objective whose completions a reward run can score) log train/reward each step: their
  // curves are read together, live while active.
  const rewardObjectives = new Set((methods.data?.objectives ?? []).filter((o) => o.reward_run_param !== null).map((o) => o.name));
  const rewardRuns = detail.stages.flatMap((stage) => (rewardObjectives.has(stage.objective) && stage.run ? [stage.run] : []));
  const metrics = useComparedMetrics(rewardRuns, MAX_POINTS, isActive(detail) ? LIVE_REFRESH_MS : false);
  const rewardSeries = (runId: number) => metrics.data?.data.find((m) => m.run_id === runId)?.series.find((s) => s.key === REWARD_KEY);
  const names = detail.stages.map((stage) => stage.name);
  const { spec } = detail;

  return (
    <div className="pipeline-page" data-pipeline-id={detail.id}>
      <div className="page-title">
        <div className="pipeline-title">
          <h1>{detail.name}</h1>
          <StageStatusBadge status={detail.status} />
        </div>
        <span className="help">
          {spec.model ?? (spec.base_run ? `run #${spec.base_run}` : "")} · {detail.stage_count} stages
          {spec.template ? ` · from the ${spec.template} template` : ""} · launched {formatDateTime(detail.created_at)}
          {detail.created_by ? ` by ${detail.created_by}` : ""}
        </span>
        {isActive(detail) && <span className="help live-dot">Live · every {LIVE_REFRESH_MS / 1000} s</span>}
      </div>
      {!readOnly && canChange && <PipelineActions detail={detail} onCloned={onCloned} onDeleted={onDeleted} />}
      <ol className="pipeline-chain" aria-label="Stages">
        {detail.stages.map((stage) => (
          <li key={stage.position} className="pipeline-chain-item">
            {stage.position > 0 && (
              <span className="pipeline-arrow" aria-hidden>
                →
              </span>
            )}
            <StageCard
              stage={stage}
              names={names}
              readOnly={readOnly}
              rewardCurve={rewardObjectives.has(stage.objective) ? { series: stage.run ? rewardSeries(stage.run.id) : undefined } : null}
            />
          </li>
        ))}
      </ol>
    </div>
  );
}

function StageCard({
  stage,
  names,
  readOnly,
  rewardCurve,
}: {
  stage: Stage;
  names: readonly string[];
  readOnly: boolean;
  /** An online RL stage: its reward curve (undefined until the run logs one). */
  rewardCurve: { series: Parameters<typeof RewardChart>[0]["series"] } | null;
}) {
  const label = stageLabel(stage.position, stage.name);
  const headingId = `stage-${stage.position}-title`;
  const rewardedBy = rewardedByText(names, stage.reward_from);
  const run = stage.run;
  return (
    <article className="card pipeline-stage" aria-labelledby={headingId} data-status={stage.status}>
      <header className="pipeline-stage-header">
        <h2 id={headingId}>{label}</h2>
        <StageStatusBadge status={stage.status} />
      </header>
      <p className="help">
        {stage.objective} · {stage.method} · {startsFromText(names, stage.position, stage.start_from)}
        {rewardedBy && `, ${rewardedBy}`}
      </p>
      {stage.reason && (stage.status === "failed" || stage.status === "canceled" || stage.status === "deleted") && (
        <p className="pipeline-stage-reason">{stage.reason}</p>
      )}
      {run ? (
        <>
          <p>
            {readOnly ? <span>Run #{run.id} {run.name}</span> : <Link to={`/runs/${run.id}`}>Run #{run.id} {run.name}</Link>}
            {run.status === "running" && run.progress.percent !== null && <span className="help"> · {Math.round(run.progress.percent)}%</span>}
          </p>
          <StageFigures run={run} />
        </>
      ) : (
        <p className="help">{stage.status === "waiting" ? "Launched when the stage before it succeeds." : "No run."}</p>
      )}
      {rewardCurve && <RewardChart title={`Reward of stage ${stage.position + 1}`} series={rewardCurve.series} />}
    </article>
  );
}

/** The figures a stage is judged by, as its run reports them. */
function StageFigures({ run }: { run: Run }) {
  const figures: [string, string][] = [];
  if (run.latest_train_loss != null) figures.push(["Latest train loss", formatNumber(run.latest_train_loss, 4)]);
  if (run.best_eval_loss != null) figures.push(["Best eval loss", formatNumber(run.best_eval_loss, 4)]);
  if (run.reward_accuracy != null) figures.push(["Reward accuracy", `${(run.reward_accuracy * 100).toFixed(1)} %`]);
  if (run.reward_margin != null) figures.push(["Reward margin", formatNumber(run.reward_margin, 4)]);
  if (figures.length === 0) return null;
  return (
    <dl className="pipeline-figures">
      {figures.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function PipelineActions({ detail, onCloned, onDeleted }: { detail: PipelineDetail; onCloned?: (id: number) => void; onDeleted?: () => void }) {
  const [sharing, setSharing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const cancel = useCancelPipeline(detail.id);
  const clone = useClonePipeline(detail.id);
  const remove = useDeletePipeline(detail.id);
  const runs = detail.stages.flatMap((stage) => (stage.run ? [stage.run] : []));
  const error = cancel.error ?? clone.error;
  return (
    <section className="card toolbar pipeline-actions" aria-label="Pipeline actions">
      {isActive(detail) && (
        <button type="button" disabled={cancel.isPending} onClick={() => cancel.mutate()} title="Stop the stage running now and drop the rest">
          {cancel.isPending ? "Canceling…" : "Cancel"}
        </button>
      )}
      <button type="button" disabled={clone.isPending} onClick={() => clone.mutate(undefined, { onSuccess: (d) => onCloned?.(d.id) })}>
        Clone
      </button>
      <button type="button" onClick={() => setSharing(true)} title="Make a read-only link anyone can open">
        Share
      </button>
      {sharing && (
        <ShareDialog runs={runs} pipeline={{ id: detail.id, name: detail.name, projectId: detail.project_id }} onClose={() => setSharing(false)} />
      )}
      <button type="button" className="danger" onClick={() => setDeleting((open) => !open)}>
        Delete
      </button>
      {deleting && (
        <div className="pipeline-delete" role="group" aria-labelledby="pipeline-delete-title">
          <strong id="pipeline-delete-title">Delete pipeline “{detail.name}”?</strong>
          <span className="help">
            Its {runs.length} run{runs.length === 1 ? " is" : "s are"} kept; stages not launched yet are dropped, and its share links stop working.
          </span>
          <button type="button" className="danger" disabled={remove.isPending} onClick={() => remove.mutate(undefined, { onSuccess: onDeleted })}>
            Delete pipeline
          </button>
          <button type="button" onClick={() => setDeleting(false)}>
            Keep it
          </button>
          {remove.error && (
            <span className="field-error" role="alert">
              {remove.error.message}
            </span>
          )}
        </div>
      )}
      {error && <ErrorBox error={error} />}
    </section>
  );
}
