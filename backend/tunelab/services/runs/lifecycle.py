"""A run's life as the worker and the reaper move it, in SQL: claim, heartbeat, progress, checkpoints, finish, and
what happens when its training process or worker is lost. Every move is one conditional UPDATE, so a duplicate
delivery, a stale training process or a second reaper changes nothing."""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import Run, RunStatus
from tunelab.services.live import events
from tunelab.services.runs import artifacts
from tunelab.training.sink import RunSummary

log = logging.getLogger(__name__)

WORKER_LOST = "worker lost"


@dataclass(frozen=True)
class Claim:
    """A delivery that won the run: which attempt this is and the step it starts from."""

    attempt: int
    start_step: int


@dataclass(frozen=True)
class StopRequests:
    cancel: bool
    force: bool


def claim_run(session: Session, run_id: int, worker: str) -> Claim | None:
    """One conditional UPDATE: only one delivery of a queued run ever gets a Claim."""
    now = utcnow()
    row = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.queued, Run.cancel_requested.is_(False))
        .values(status=RunStatus.running, worker=worker, started_at=now, heartbeat_at=now, attempt=Run.attempt + 1,
                status_reason=None, start_step=func.coalesce(Run.checkpoint_step, 0), phase=None)
        .returning(Run.attempt, Run.checkpoint_step)
    ).first()
    if row is None:
        return None
    events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.running.value})
    return Claim(attempt=row.attempt, start_step=row.checkpoint_step or 0)


def is_current_attempt(session: Session, run_id: int, attempt: int) -> bool:
    """Whether `attempt` is the run's running attempt (a training process started for an older one must not train)."""
    return session.scalar(
        select(Run.id).where(Run.id == run_id, Run.status == RunStatus.running, Run.attempt == attempt)
    ) is not None


def beat(session: Session, run_id: int) -> StopRequests:
    """Stamp the heartbeat; returns the stop requests (the SQL fallback to the Redis notices)."""
    session.execute(update(Run).where(Run.id == run_id, Run.status == RunStatus.running).values(heartbeat_at=utcnow()))
    return stop_requests(session, run_id)


def stop_requests(session: Session, run_id: int) -> StopRequests:
    row = session.execute(select(Run.cancel_requested, Run.force_stop_requested).where(Run.id == run_id)).first()
    return StopRequests(cancel=bool(row and row[0]), force=bool(row and row[1]))


def record_progress(session: Session, run_id: int, step: int, total_steps: int | None) -> None:
    values: dict[str, Any] = {"current_step": step, "progress_at": utcnow()}
    if total_steps:
        values["total_steps"] = total_steps
    session.execute(update(Run).where(Run.id == run_id).values(**values))
    events.publish_after_commit(session, run_id, {"type": "progress", "step": step, "total_steps": total_steps})


def record_phase(session: Session, run_id: int, phase: str) -> None:
    session.execute(update(Run).where(Run.id == run_id).values(phase=phase))
    events.publish_after_commit(session, run_id, {"type": "phase", "phase": phase})


SUMMARY_FIELDS = ("trainable_params", "total_params", "peak_memory_bytes", "wall_time_s", "tokens_per_second",
                  "final_eval_loss", "best_eval_loss")


# Summary figures kept in run.summary_details: shown on the run page, never sorted or filtered on.
SUMMARY_DETAILS = ("model_state_bytes", "model_state_weights_bytes", "model_state_gradients_bytes",
                   "model_state_optimizer_states_bytes", "cuda_peak_memory_bytes", "process_peak_rss_bytes",
                   "runtime_rss_bytes", "train_steps_timed", "train_tokens_timed", "train_seconds_timed",
                   "tokenized_rows", "truncated_rows", "truncated_tokens", "generation_rows_requested",
                   "generation_rows", "generation_exact_match", "generation_rouge_l", "generation_bleu",
                   "base_generation_rows", "base_generation_exact_match", "base_generation_rouge_l",
                   "base_generation_bleu", "reward_accuracy", "reward_margin")


def record_summary(session: Session, run_id: int, summary: RunSummary) -> None:
    values: dict[str, Any] = {k: v for k, v in summary.items() if k in SUMMARY_FIELDS and v is not None}
    details = {k: v for k, v in summary.items() if k in SUMMARY_DETAILS and v is not None}
    if details:
        # Merged into what earlier reports of this run (its truncation counts at start, say) recorded.
        known = session.scalar(select(Run.summary_details).where(Run.id == run_id)) or {}
        values["summary_details"] = {**known, **details}
    if values:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def record_start(session: Session, run_id: int, versions: dict[str, str], model_identity: dict[str, Any]) -> None:
    """What the worker found when it started: library versions and the identity of the base weights it loads."""
    run = session.get(Run, run_id)
    if run is not None:
        run.versions = versions
        run.config = {**run.config, "model_identity": model_identity}


def record_checkpoint(session: Session, settings: Settings, run_id: int, step: int) -> None:
    """A checkpoint at `step` is in the store: resumes start there, and its files are listed as artifacts at once."""
    session.execute(update(Run).where(Run.id == run_id).values(checkpoint_step=step))
    artifacts.index_run_artifacts(session, settings, run_id)


def finish_run(session: Session, run_id: int, status: RunStatus, reason: str | None = None,
               attempt: int | None = None) -> bool:
    """Move a running run (of `attempt`, when given) to a finished status; False when something else (the reaper,
    say) moved it first."""
    condition = [Run.id == run_id, Run.status == RunStatus.running]
    if attempt is not None:
        condition.append(Run.attempt == attempt)
    moved = rowcount(session.execute(update(Run).where(*condition)
                                     .values(status=status, status_reason=reason, finished_at=utcnow())))
    if moved:
        events.publish_after_commit(session, run_id, {"type": "status", "status": status.value})
    return moved == 1


def requeue_preempted(session: Session, run_id: int, attempt: int, why: str) -> bool:
    """The run's worker is shutting down (SIGTERM: a deploy, a scale-down, a node drained) and the run stopped at a
    checkpoint it saved for that: it goes back to the queue for another worker to resume, and this does not count
    as one of its automatic resumes (nothing went wrong). False when something else moved it first."""
    run = session.scalar(select(Run).where(Run.id == run_id, Run.status == RunStatus.running, Run.attempt == attempt))
    if run is None:
        return False
    start = f"checkpoint at step {run.checkpoint_step}" if run.checkpoint_step else "the start (no checkpoint yet)"
    moved = rowcount(session.execute(
        update(Run).where(Run.id == run_id, Run.status == RunStatus.running, Run.attempt == attempt)
        .values(status=RunStatus.queued, status_reason=f"{why} at step {run.current_step}; resuming from {start} on "
                f"the next worker of queue {run.queue}", queued_at=utcnow(), worker=None, heartbeat_at=None,
                dispatched_at=None, dispatch_id=None, dispatch_epoch=None)))
    if moved:
        events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.queued.value})
    return moved == 1


def training_lost(session: Session, settings: Settings, run_id: int, why: str, attempt: int | None = None,
                  stale_before: datetime | None = None) -> RunStatus | None:
    """The run's training process died without finishing it (killed, out of memory, its worker gone). A run whose
    stop was asked for ends `canceled`; otherwise it goes back to the queue to resume from its last checkpoint, at
    most `max_auto_resumes` times in a row, and then fails with the reason. Every file it left is indexed.

    Returns the new status, or None when the run had already moved on (finished, or claimed again)."""
    max_auto_resumes = settings.max_auto_resumes
    condition = [Run.id == run_id, Run.status == RunStatus.running]
    if attempt is not None:
        condition.append(Run.attempt == attempt)
    if stale_before is not None:
        condition.append(Run.heartbeat_at < stale_before)
    run = session.scalar(select(Run).where(*condition).with_for_update())
    if run is None:
        return None
    where = f"at step {run.current_step}"
    if run.cancel_requested:
        status, values = RunStatus.canceled, {"status_reason": f"canceled; {why} {where}", "finished_at": utcnow()}
    elif run.auto_resumes < max_auto_resumes:
        start = f"checkpoint at step {run.checkpoint_step}" if run.checkpoint_step else "the start (no checkpoint yet)"
        status = RunStatus.queued
        values = {"status_reason": f"{why} {where}; resuming from {start} "
                                   f"(automatic resume {run.auto_resumes + 1} of {max_auto_resumes})",
                  "queued_at": utcnow(), "auto_resumes": run.auto_resumes + 1, "worker": None,
                  "heartbeat_at": None, "dispatched_at": None, "dispatch_id": None, "dispatch_epoch": None}
    else:
        status = RunStatus.failed
        tries = f"; gave up after {max_auto_resumes} automatic resumes" if max_auto_resumes else ""
        values = {"status_reason": f"{why} {where}{tries}", "finished_at": utcnow()}
    session.execute(update(Run).where(*condition).values(status=status, **values))
    try:
        artifacts.index_run_artifacts(session, settings, run_id)
    except AppError:  # the store away: the index keeps what it last listed, and the next look refreshes it
        log.warning("run %s: the artifact store could not be listed; its index is as it was", run_id, exc_info=True)
    events.publish_after_commit(session, run_id, {"type": "status", "status": status.value})
    return status


def reap_lost_runs(session: Session, settings: Settings) -> dict[int, RunStatus]:
    """Runs whose worker stopped beating: it died, so nobody else will finish them (see training_lost)."""
    timeout_s = settings.heartbeat_timeout_s
    cutoff = utcnow() - timedelta(seconds=timeout_s)
    lost = list(session.scalars(
        select(Run.id).where(Run.status == RunStatus.running, Run.external.is_(False), Run.heartbeat_at < cutoff)
    ))
    reaped = {}
    for run_id in lost:
        status = training_lost(session, settings, run_id, f"{WORKER_LOST}: no heartbeat for {timeout_s:g} s",
                               stale_before=cutoff)
        if status is not None:
            reaped[run_id] = status
    return reaped
