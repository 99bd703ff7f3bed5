import { useId, type ReactNode } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { ProgressBar, StatusBadge } from "../../../components/ui/ui";
import { runningProgressText } from "../../../lib/format";
import { attemptLabel } from "../resume";

/** `actions` (the signed-in page's buttons) also bring the link to the run's study, which a shared page cannot open. */
export function RunHeader({ run, actions }: { run: Run; actions?: ReactNode }) {
  const { progress } = run;
  const titleId = useId();

  // Named by the run's name; its status is a live region, so a screen reader hears the run start and finish.
  return (
    <section className="card run-header" aria-labelledby={titleId}>
      <div className="run-title">
        <h1 id={titleId}>{run.name}</h1>
        <span role="status">
          <StatusBadge status={run.status} />
        </span>
        {run.external && <span className="badge badge-queued">external</span>}
        {run.cancel_requested && run.status === "running" && (
          <span className="help">{run.force_stop_requested ? "killing the training process…" : "stopping…"}</span>
        )}
        {actions && <div className="card-actions run-actions">{actions}</div>}
      </div>
      <div className="run-meta help">
        #{run.id} · {run.objective} · {run.method} · {run.model}
        {run.worker ? ` · worker ${run.worker}` : ""} · queue {run.queue}
        {actions && run.study_id != null && (
          <>
            {" · "}
            <Link to={`/studies/${run.study_id}`}>
              in study #{run.study_id}
            </Link>
          </>
        )}
        {attemptLabel(run) ? ` · ${attemptLabel(run)}` : ""}
        {run.checkpoint_step !== null ? ` · checkpoint at step ${run.checkpoint_step}` : ""}
        {run.started_at ? ` · started ${new Date(run.started_at).toLocaleString()}` : ""}
        {run.finished_at ? ` · finished ${new Date(run.finished_at).toLocaleString()}` : ""}
      </div>
      {(run.status === "failed" || run.status === "canceled" || run.status === "queued") && run.status_reason && (
        <div className={run.status === "failed" ? "error-box" : "notice"} data-testid="status-reason">
          {run.status_reason}
        </div>
      )}
      {run.status === "queued" && (
        <p className="queue-position" data-testid="queue-position">
          Queued{run.queue_position !== null ? ` · position ${run.queue_position} in ${run.queue}` : ""}
        </p>
      )}
      {run.status === "running" && (
        <div className="run-progress" data-testid="run-progress">
          <ProgressBar percent={progress.percent} label={runningProgressText(progress)} />
        </div>
      )}
    </section>
  );
}
