"""Side effects that must wait for the SQL transaction they announce: live notifications on Redis channel
run:<id> and queue sends. A listener who reads SQL on a notification always finds the rows, and a worker
never receives a run id before the run's row is visible."""

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from typing import Literal, TypedDict

from sqlalchemy import event
from sqlalchemy.orm import Session

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings
from tunelab.services.live import watched_runs

log = logging.getLogger(__name__)
_PENDING_KEY = "tunelab_after_commit"


class StatusEvent(TypedDict):
    type: Literal["status"]
    status: str  # a RunStatus value


class ProgressEvent(TypedDict):
    type: Literal["progress"]
    step: int
    total_steps: int | None


class PhaseEvent(TypedDict):
    type: Literal["phase"]
    phase: str  # a training.sink.RunPhase


class MetricsEvent(TypedDict):
    type: Literal["metrics"]
    seq: int  # the flush that stored the points; live views read everything after the last one they saw


class StopEvent(TypedDict):
    type: Literal["cancel", "force_stop"]


# What is published on run:<id>: the notices live views follow, and the stop requests the worker listens for.
RunEvent = StatusEvent | ProgressEvent | PhaseEvent | MetricsEvent | StopEvent


def run_channel(run_id: int) -> str:
    return f"{get_settings().redis_namespace}:run:{run_id}"


def call_after_commit(session: Session, callback: Callable[[], None]) -> None:
    session.info.setdefault(_PENDING_KEY, []).append(callback)


def publish_after_commit(session: Session, run_id: int, message: RunEvent) -> None:
    call_after_commit(session, lambda: publish_now(run_id, message))


def publish_metrics_after_commit(session: Session, run_id: int, seq: int) -> None:
    call_after_commit(session, lambda: publish_metrics_now(run_id, seq))


def publish_metrics_now(run_id: int, seq: int) -> None:
    """The notice of a flush, unless this process knows nobody watches the run (services/live/watched_runs)."""
    if watched_runs.watched(run_id):
        publish_now(run_id, {"type": "metrics", "seq": seq})


def publish_metrics_soon(run_id: int, seq: int) -> None:
    """publish_metrics_now from the event loop, which must not wait for Redis: the notice goes from a thread."""
    if watched_runs.watched(run_id):
        notice: MetricsEvent = {"type": "metrics", "seq": seq}
        asyncio.get_running_loop().run_in_executor(None, publish_now, run_id, notice)


def publish_now(run_id: int, message: RunEvent) -> None:
    try:
        get_redis().publish(run_channel(run_id), json.dumps(message))
    except Exception:  # noqa: BLE001  (Redis only carries hints; SQL already has the truth)
        log.warning("could not publish to %s", run_channel(run_id), exc_info=True)


def wait_for_notice(run_id: int, kinds: frozenset[str], heard: Callable[[], None], stop: threading.Event,
                    what: str) -> None:
    """Call `heard` for each notice of one of `kinds` on run:<id> until `stop` is set (run it in a thread of its
    own); reconnects after losing Redis. Notices are hints: whoever waits also polls SQL, which says the same."""
    while not stop.is_set():
        try:
            pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(run_channel(run_id))
            while not stop.is_set():
                message = pubsub.get_message(timeout=0.5)
                if message and json.loads(message["data"]).get("type") in kinds:
                    heard()
            pubsub.close()
        except Exception:  # noqa: BLE001  (Redis away: the SQL poll still sees the request)
            log.warning("%s of run %s lost Redis; retrying", what, run_id, exc_info=True)
            stop.wait(2)


@event.listens_for(Session, "after_commit")
def _run_pending(session: Session) -> None:
    for callback in session.info.pop(_PENDING_KEY, ()):
        try:
            callback()
        except Exception:  # noqa: BLE001  (the reconciler re-sends what a lost side effect dropped)
            log.warning("after-commit action failed", exc_info=True)


@event.listens_for(Session, "after_rollback")
def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)
