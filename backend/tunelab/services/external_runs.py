"""Runs trained outside Tunelab (the SDK, raw HTTP): they only log here, and their script says how they ended."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.db.base import utcnow
from tunelab.db.models import MetricSummary, Run, RunStatus
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.schemas.runs import RunFinish
from tunelab.services import audit, lifecycle
from tunelab.services.principal import Actor
from tunelab.training.sink import RunSummary


def finish_external_run(session: Session, run: Run, body: RunFinish, actor: Actor) -> Run:
    """End a running external run as succeeded or failed, with the summary its logged points give."""
    if not run.external:
        raise AppError("RUN_NOT_EXTERNAL", f"run {run.id} is trained by Tunelab, which finishes it itself; only a run "
                       'created with "external": true is finished through the API', {"run_id": run.id})
    if run.status in FINISHED_STATUSES:
        raise AppError("RUN_FINISHED", f"run {run.id} is already {run.status.value}", {"status": run.status.value})
    status = RunStatus(body.status)
    reason = body.reason if status == RunStatus.failed else None
    lifecycle.record_summary(session, run.id, summary_from_points(session, run))
    if not lifecycle.finish_run(session, run.id, status, reason):
        session.refresh(run)
        raise AppError("RUN_FINISHED", f"run {run.id} is already {run.status.value}", {"status": run.status.value})
    audit.record(session, run.project_id, actor, "run.finish", "run", run.id,
                 f"{actor.label} finished {run.name} as {status.value}", status=status.value)
    session.flush()
    session.refresh(run)
    return run


def summary_from_points(session: Session, run: Run) -> RunSummary:
    """What the summary columns can say from the run's metric summaries: wall time from its start to now, the
    last and best eval loss, and tokens/s as tokens seen over the wall time (a training run measures step time
    only; an external script does not tell us its step times)."""
    cells = {row.key: row for row in session.scalars(
        select(MetricSummary).where(MetricSummary.run_id == run.id,
                                    MetricSummary.key.in_(("eval/loss", "train/tokens_seen"))))}
    summary: RunSummary = {}
    if run.started_at is not None:
        summary["wall_time_s"] = max((utcnow() - run.started_at).total_seconds(), 0.0)
    if eval_loss := cells.get("eval/loss"):
        summary["final_eval_loss"] = eval_loss.last_value
        summary["best_eval_loss"] = eval_loss.min_value
    tokens_seen = cells.get("train/tokens_seen")
    if tokens_seen is not None and summary.get("wall_time_s"):
        summary["tokens_per_second"] = tokens_seen.last_value / summary["wall_time_s"]
    return summary
