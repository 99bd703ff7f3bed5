"""Runs trained outside Tunelab (the SDK, raw HTTP): they only log here, and their script says how they ended."""

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.db.base import utcnow
from tunelab.db.models import MetricSummary, Run, RunStatus
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.schemas.runs import RunFinish
from tunelab.services.accounts import audit
from tunelab.services.accounts.principal import Actor
from tunelab.services.runs import lifecycle
from tunelab.training.sink import RunSummary

# An external run's params are whatever its script sends, and every run list carries them: bounded as MLflow bounds a
# param (key 250 characters, value 6,000), a value's size being its JSON text's, since here a value may be a list or
# a nested config. A TrainingArguments with a model config is ~150 params and ~10 KB.
MAX_PARAM_KEY_CHARS = 250
MAX_PARAM_VALUE_CHARS = 6_000
MAX_PARAM_DEPTH = 4  # containers nested in one param's value
MAX_PARAMS = 500
MAX_PARAMS_CHARS = 64 * 1024  # all of them, as JSON


def _param_error(field: str, message: str) -> AppError:
    return AppError("VALIDATION_ERROR", f"{field}: {message}", [{"field": field, "message": message}])


def _field_name(parent: str, key: object) -> str:
    # A key over the limit is named by its start: the error repeats the field, and the key may be megabytes long.
    text = str(key)
    return f"{parent}.{text[:40]}…" if len(text) > MAX_PARAM_KEY_CHARS else f"{parent}.{text}"


def _check_nesting(value: object, field: str, depth: int = 0) -> None:
    """Keys no longer than a param's name may be, and at most MAX_PARAM_DEPTH containers deep (checked before the
    value is measured as JSON, which a deeper one would overflow)."""
    if isinstance(value, dict):
        items: list[tuple[object, object]] = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return
    if depth >= MAX_PARAM_DEPTH:
        raise _param_error(field, f"nested at most {MAX_PARAM_DEPTH} levels deep")
    for key, item in items:
        name = _field_name(field, key)
        if isinstance(key, str) and len(key) > MAX_PARAM_KEY_CHARS:
            raise _param_error(name, f"a key is at most {MAX_PARAM_KEY_CHARS} characters")
        _check_nesting(item, name, depth + 1)


def check_params(params: dict[str, Any]) -> None:
    """Refuse the params of an external run past the limits above, naming the first param at fault (422)."""
    if len(params) > MAX_PARAMS:
        raise _param_error("params", f"at most {MAX_PARAMS} params, not {len(params)}")
    for key, value in params.items():
        field = _field_name("params", key)
        if len(key) > MAX_PARAM_KEY_CHARS:
            raise _param_error(field, f"a param's name is at most {MAX_PARAM_KEY_CHARS} characters")
        _check_nesting(value, field)
        size = len(value) if isinstance(value, str) else len(json.dumps(value))
        if size > MAX_PARAM_VALUE_CHARS:
            raise _param_error(field, f"at most {MAX_PARAM_VALUE_CHARS} characters" +
                               ("" if isinstance(value, str) else " as JSON"))
    if len(json.dumps(params)) > MAX_PARAMS_CHARS:
        raise _param_error("params", f"at most {MAX_PARAMS_CHARS} characters in all, as JSON")


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
