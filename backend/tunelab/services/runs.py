"""The life of a run in SQL: create, list, claim, heartbeat, cancel, finish, reap, clone, delete."""

import base64
import json
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Select, and_, func, or_, select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import utcnow
from tunelab.db.models import Dataset, MetricSummary, Run, RunStatus
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.schemas.runs import (
    RunClone,
    RunCreate,
    RunProgress,
    RunPublic,
    RunSortField,
    RunsPublic,
)
from tunelab.services import audit, events
from tunelab.services.models import model_identity, resolve_model_path
from tunelab.services.principal import SYSTEM, Actor
from tunelab.training import registry

Dispatcher = Callable[[int, str], None]
WORKER_LOST = "worker lost"


def get_run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise AppError("RUN_NOT_FOUND", f"run {run_id} does not exist", {"run_id": run_id})
    return run


def _params_error(exc: ValidationError) -> AppError:
    details = [
        {"field": ".".join(["params", *(str(p) for p in e["loc"])]), "message": e["msg"], "type": e["type"]}
        for e in exc.errors()
    ]
    first = details[0]
    return AppError("VALIDATION_ERROR", f"{first['field']}: {first['message']}", details)


def _resolve_training(session: Session, settings: Settings, body: RunCreate, queue: str,
                      project_id: int) -> dict[str, Any]:
    """Check objective, method, params, model and dataset; return the full resolved config."""
    try:
        objective = registry.get_objective(body.objective)
    except KeyError:
        names = ", ".join(o.name for o in registry.list_objectives())
        raise AppError("OBJECTIVE_NOT_FOUND", f"objective: unknown objective {body.objective!r} (known: {names})",
                       {"field": "objective"}) from None
    try:
        method = registry.get_method(body.method)
    except KeyError:
        names = ", ".join(m.name for m in registry.list_methods())
        raise AppError("METHOD_NOT_FOUND", f"method: unknown method {body.method!r} (known: {names})",
                       {"field": "method"}) from None
    if objective.name not in method.objectives:
        raise AppError("VALIDATION_ERROR", f"method: {method.name} does not support objective {objective.name}",
                       [{"field": "method", "message": f"not available for objective {objective.name}"}])
    try:
        params = registry.resolve_params(method.name, body.params)
    except ValidationError as exc:
        raise _params_error(exc) from None
    precision = params.get("precision", "fp32")
    if precision != "fp32" and queue == "cpu":
        raise AppError("VALIDATION_ERROR", f"params.precision: {precision} needs a GPU; use fp32 on the cpu queue, "
                       "or send the run to a GPU queue", [{"field": "params.precision", "message": "needs a GPU"}])
    model_path = resolve_model_path(settings, body.model)
    if body.dataset is None:
        raise AppError("VALIDATION_ERROR", "dataset: a dataset is required",
                       [{"field": "dataset", "message": "required"}])
    dataset = session.get(Dataset, body.dataset)
    if dataset is None or not (dataset.bundled or dataset.project_id == project_id):
        raise AppError("DATASET_NOT_FOUND", f"dataset: dataset {body.dataset} does not exist", {"field": "dataset"})
    if dataset.format not in objective.dataset_formats:
        accepted = ", ".join(objective.dataset_formats)
        raise AppError("VALIDATION_ERROR",
                       f"dataset: {objective.name} takes {accepted} datasets; {dataset.name!r} is {dataset.format}",
                       [{"field": "dataset", "message": f"format {dataset.format} not accepted"}])
    return {
        "objective": objective.name,
        "method": method.name,
        "model": body.model,
        "model_path": str(model_path),
        "model_identity": model_identity(model_path),
        "dataset": {"id": dataset.id, "name": dataset.name, "format": dataset.format,
                    "content_hash": dataset.content_hash, "rows": dataset.row_count},
        "params": params,
    }


def create_run(session: Session, settings: Settings, body: RunCreate, dispatch: Dispatcher, project_id: int,
               actor: Actor) -> Run:
    """A new run in `project_id` (the caller's right to launch there is already checked)."""
    queue = body.queue or settings.default_queue
    if body.external:
        run = Run(project_id=project_id, objective=body.objective, method=body.method, model=body.model,
                  dataset_id=None, config={"params": body.params, "external": True},
                  seed=int(body.params.get("seed", 0)), queue=queue, external=True,
                  status=RunStatus.running, started_at=utcnow(), name=body.name or "")
    else:
        config = _resolve_training(session, settings, body, queue, project_id)
        run = Run(project_id=project_id, objective=config["objective"], method=config["method"], model=body.model,
                  dataset_id=config["dataset"]["id"], dataset_hash=config["dataset"]["content_hash"],
                  config=config, seed=config["params"]["seed"], queue=queue, name=body.name or "",
                  total_steps=config["params"].get("max_steps") or None)
    session.add(run)
    session.flush()
    if not run.name:
        run.name = f"{run.method}-{Path(run.model).name}-{run.id}"
    audit.record(session, project_id, actor, "run.launch", "run", run.id,
                 f"{actor.label} launched {run.name} ({run.method}, {Path(run.model).name})",
                 external=run.external)
    if not run.external:
        run_id, run_queue = run.id, run.queue
        events.call_after_commit(session, lambda: dispatch(run_id, run_queue))
    return run


def clone_run(session: Session, settings: Settings, source: Run, body: RunClone, dispatch: Dispatcher,
              actor: Actor) -> Run:
    if source.external:
        raise AppError("VALIDATION_ERROR", "an external run has no training config to clone",
                       [{"field": "run_id", "message": "external run"}])
    params = {**source.config.get("params", {}), **body.params}
    create = RunCreate(name=body.name or f"{source.name} (clone)", objective=source.objective, method=source.method,
                       model=source.model, dataset=source.dataset_id, params=params,
                       queue=body.queue or source.queue)
    return create_run(session, settings, create, dispatch, source.project_id, actor)


# Listing --------------------------------------------------------------------------------------------------------

_SORT_COLUMNS = {
    "queued_at": Run.queued_at, "name": Run.name, "status": Run.status, "method": Run.method,
    "best_eval_loss": Run.best_eval_loss, "tokens_per_second": Run.tokens_per_second, "wall_time_s": Run.wall_time_s,
}


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(cursor.encode()))["o"])
    except (ValueError, KeyError, TypeError):
        raise AppError("INVALID_CURSOR", "cursor: not a cursor returned by this API", {"field": "cursor"}) from None
    if offset < 0:
        raise AppError("INVALID_CURSOR", "cursor: not a cursor returned by this API", {"field": "cursor"})
    return offset


def _filtered(stmt: Select, status: list[RunStatus] | None, method: str | None, objective: str | None,
              model: str | None, q: str | None, ids: list[int] | None = None) -> Select:
    if ids:
        stmt = stmt.where(Run.id.in_(ids))
    if status:
        stmt = stmt.where(Run.status.in_(status))
    if method:
        stmt = stmt.where(Run.method == method)
    if objective:
        stmt = stmt.where(Run.objective == objective)
    if model:
        stmt = stmt.where(Run.model == model)
    if q:
        pattern = f"%{q.lower()}%"
        stmt = stmt.where(or_(func.lower(Run.name).like(pattern), func.lower(Run.model).like(pattern),
                              func.lower(Run.method).like(pattern)))
    return stmt


def list_runs(session: Session, *, project_ids: list[int], status: list[RunStatus] | None = None, method: str | None = None,
              objective: str | None = None, model: str | None = None, q: str | None = None,
              sort: RunSortField = "queued_at", order: str = "desc", limit: int = 50,
              cursor: str | None = None, ids: list[int] | None = None) -> RunsPublic:
    offset = _decode_cursor(cursor)
    column = _SORT_COLUMNS[sort]
    direction = column.desc().nulls_last() if order == "desc" else column.asc().nulls_last()
    tie = Run.id.desc() if order == "desc" else Run.id.asc()
    in_projects = Run.project_id.in_(project_ids)
    stmt = _filtered(select(Run).where(in_projects), status, method, objective, model, q, ids).order_by(direction, tie)
    runs = list(session.scalars(stmt.offset(offset).limit(limit + 1)))
    count = session.scalar(_filtered(select(func.count(Run.id)).where(in_projects), status, method, objective, model,
                                     q, ids)) or 0
    next_cursor = _encode_cursor(offset + limit) if len(runs) > limit else None
    return RunsPublic(data=to_public_many(session, runs[:limit]), count=count, next_cursor=next_cursor)


def queue_position(session: Session, run: Run) -> int | None:
    if run.status != RunStatus.queued:
        return None
    ahead = session.scalar(
        select(func.count(Run.id)).where(
            Run.status == RunStatus.queued, Run.queue == run.queue,
            or_(Run.queued_at < run.queued_at, and_(Run.queued_at == run.queued_at, Run.id < run.id)),
        )
    )
    return (ahead or 0) + 1


def progress_of(run: Run) -> RunProgress:
    total = run.total_steps
    percent = 100.0 * run.current_step / total if total else None
    eta = None
    if run.status == RunStatus.running and run.started_at and total and run.current_step > 0:
        reference = run.progress_at or utcnow()
        elapsed = (reference - run.started_at).total_seconds()
        eta = max(0.0, elapsed / run.current_step * (total - run.current_step))
    return RunProgress(current_step=run.current_step, total_steps=total, percent=percent, eta_seconds=eta)


def _latest_train_losses(session: Session, run_ids: list[int]) -> dict[int, float]:
    if not run_ids:
        return {}
    rows = session.execute(
        select(MetricSummary.run_id, MetricSummary.last_value).where(
            MetricSummary.run_id.in_(run_ids), MetricSummary.key == "train/loss"
        )
    )
    return {run_id: value for run_id, value in rows}


def to_public_many(session: Session, runs: list[Run]) -> list[RunPublic]:
    losses = _latest_train_losses(session, [r.id for r in runs])
    public = []
    for run in runs:
        item = RunPublic.model_validate(
            {**{c.key: getattr(run, c.key) for c in Run.__table__.columns}, "trainable_percent": run.trainable_percent,
             "progress": progress_of(run), "queue_position": queue_position(session, run),
             "latest_train_loss": losses.get(run.id)}
        )
        public.append(item)
    return public


def to_public(session: Session, run: Run) -> RunPublic:
    return to_public_many(session, [run])[0]


# The worker's side ------------------------------------------------------------------------------------------------

def claim_run(session: Session, run_id: int, worker: str) -> bool:
    """One conditional UPDATE: only one delivery of a run ever gets True."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.queued, Run.cancel_requested.is_(False))
        .values(status=RunStatus.running, worker=worker, started_at=now, heartbeat_at=now)
    )
    claimed = result.rowcount == 1
    if claimed:
        events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.running.value})
    return claimed


def beat(session: Session, run_id: int) -> bool:
    """Stamp the heartbeat; returns whether a cancel was requested (the SQL fallback to the Redis notice)."""
    session.execute(update(Run).where(Run.id == run_id, Run.status == RunStatus.running).values(heartbeat_at=utcnow()))
    return bool(session.scalar(select(Run.cancel_requested).where(Run.id == run_id)))


def record_progress(session: Session, run_id: int, step: int, total_steps: int | None) -> None:
    values: dict[str, Any] = {"current_step": step, "progress_at": utcnow()}
    if total_steps:
        values["total_steps"] = total_steps
    session.execute(update(Run).where(Run.id == run_id).values(**values))
    events.publish_after_commit(session, run_id, {"type": "progress", "step": step, "total_steps": total_steps})


SUMMARY_FIELDS = ("trainable_params", "total_params", "peak_memory_bytes", "wall_time_s", "tokens_per_second",
                  "final_eval_loss", "best_eval_loss")


def record_summary(session: Session, run_id: int, summary: dict[str, Any]) -> None:
    values = {k: v for k, v in summary.items() if k in SUMMARY_FIELDS and v is not None}
    if values:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def record_versions(session: Session, run_id: int, versions: dict[str, str]) -> None:
    session.execute(update(Run).where(Run.id == run_id).values(versions=versions))


def finish_run(session: Session, run_id: int, status: RunStatus, reason: str | None = None) -> bool:
    """Move a running run to a finished status; False when something else (the reaper, say) finished it first."""
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status == RunStatus.running)
        .values(status=status, status_reason=reason, finished_at=utcnow())
    )
    if result.rowcount:
        events.publish_after_commit(session, run_id, {"type": "status", "status": status.value})
    return result.rowcount == 1


def request_cancel(session: Session, run_id: int, actor: Actor = SYSTEM) -> Run:
    run = get_run(session, run_id)
    if run.status in FINISHED_STATUSES:
        raise AppError("RUN_FINISHED", f"run {run_id} already {run.status.value}", {"status": run.status.value})
    audit.record(session, run.project_id, actor, "run.cancel", "run", run_id,
                 f"{actor.label} canceled {run.name} while {run.status.value}")
    if run.status == RunStatus.queued:
        # Canceled in SQL now; the worker's claim then finds no queued row and never starts it.
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.queued)
            .values(status=RunStatus.canceled, cancel_requested=True, finished_at=utcnow(),
                    status_reason="canceled before it started")
        )
        if result.rowcount == 0:  # claimed meanwhile: cancel it as a running run
            session.refresh(run)
            return _cancel_running(session, run)
        events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.canceled.value})
    else:
        return _cancel_running(session, run)
    session.flush()
    session.refresh(run)
    return run


def _cancel_running(session: Session, run: Run) -> Run:
    """A running run stops at its next step (the worker hears the cancel); an external one ends now."""
    if run.external:
        finish_run(session, run.id, RunStatus.canceled, "canceled by user")
    else:
        run.cancel_requested = True
        events.publish_after_commit(session, run.id, {"type": "cancel"})
    session.flush()
    session.refresh(run)
    return run


def reap_lost_runs(session: Session, timeout_s: float) -> list[int]:
    """Fail running runs whose worker stopped beating: the worker died, so nobody else will finish them."""
    cutoff = utcnow() - timedelta(seconds=timeout_s)
    lost = list(session.scalars(
        select(Run.id).where(Run.status == RunStatus.running, Run.external.is_(False), Run.heartbeat_at < cutoff)
    ))
    reaped = []
    for run_id in lost:
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.running, Run.heartbeat_at < cutoff)
            .values(status=RunStatus.failed, finished_at=utcnow(),
                    status_reason=f"{WORKER_LOST}: no heartbeat for {timeout_s:g} s")
        )
        if result.rowcount:
            reaped.append(run_id)
            events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.failed.value})
    return reaped


def requeue_stale(session: Session, older_than_s: float, dispatch: Dispatcher) -> list[int]:
    """Re-send runs still queued in SQL after a while (a lost message, a wiped Redis); a duplicate is harmless."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    stale = list(session.execute(
        select(Run.id, Run.queue).where(Run.status == RunStatus.queued, Run.external.is_(False),
                                        Run.queued_at < cutoff)
    ))
    for run_id, queue in stale:
        events.call_after_commit(session, lambda run_id=run_id, queue=queue: dispatch(run_id, queue))
    return [run_id for run_id, _ in stale]


def run_dir(settings: Settings, run_id: int) -> Path:
    return settings.artifact_dir / str(run_id)


def delete_run(session: Session, settings: Settings, run_id: int, actor: Actor = SYSTEM) -> None:
    run = get_run(session, run_id)
    if run.status not in FINISHED_STATUSES:
        raise AppError("RUN_NOT_FINISHED", f"run {run_id} is {run.status.value}; cancel it before deleting",
                       {"status": run.status.value})
    audit.record(session, run.project_id, actor, "run.delete", "run", run_id, f"{actor.label} deleted {run.name}")
    session.delete(run)
    session.flush()
    folder = run_dir(settings, run_id)
    events.call_after_commit(session, lambda: shutil.rmtree(folder, ignore_errors=True))
