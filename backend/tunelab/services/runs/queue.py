"""The queue: every queued run has exactly one message in the broker, and SQL records which.

A run is sent again only when its message is really gone: it was never sent (the broker was down when the run was
queued), it was sent in an earlier broker epoch (Redis restarted empty, or was wiped), or the broker no longer holds
it (the process died between recording and sending, or Redis came back from an older snapshot). Waiting behind a
long run is no reason: its message is still there, and a second copy only floods the queue.

Each send is a compare-and-swap on the run's `dispatch_id`, so several API processes reconciling at once still send
one message per run.
"""

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from sqlalchemy import ColumnElement, or_, select, update

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import Run, RunStatus
from tunelab.db.session import session_scope

log = logging.getLogger(__name__)

# A message recorded this long ago is looked for in the broker; younger ones may still be on their way.
MESSAGE_CHECK_AFTER_S = 30.0
# The broker is asked twice, this far apart, before a message counts as gone: a worker that has just popped a message
# holds it nowhere the broker can show for an instant.
SECOND_LOOK_S = 1.0
RECONCILE_LOCK_TTL_S = 60


class Broker(Protocol):
    """Where run messages go. The worker package implements it for Celery on Redis; services never import Celery."""

    def epoch(self) -> str:
        """An id of the broker's current contents; it changes when the broker loses its data."""
        ...

    def send(self, run_id: int, queue: str, message_id: str) -> None:
        """Put one train_run message for the run on `queue`; raises when the broker is unreachable."""
        ...

    def held_message_ids(self, queue: str) -> set[str]:
        """Ids of the messages the broker holds for `queue`: waiting, or delivered and not yet acknowledged."""
        ...

    def held_train_messages(self, queues: set[str]) -> dict[str, int]:
        """Message id -> run id of every train_run message the broker holds for `queues`: waiting, or delivered and
        not yet acknowledged (by any worker, live or dead)."""
        ...

    def discard_messages(self, queues: set[str], message_ids: set[str]) -> int:
        """Remove these train_run messages wherever the broker holds them; returns how many it removed."""
        ...


@dataclass
class Reconciliation:
    """What one sweep sent, and why."""

    epoch: str | None = None
    never_sent: list[int] = field(default_factory=list)
    older_epoch: list[int] = field(default_factory=list)
    message_gone: list[int] = field(default_factory=list)
    discarded: list[int] = field(default_factory=list)

    @property
    def sent(self) -> list[int]:
        return self.never_sent + self.older_epoch + self.message_gone


def _send(broker: Broker, run_id: int, queue: str, epoch: str, expected_dispatch_id: str | None) -> bool:
    """Record a new message for the run, if its dispatch is still `expected_dispatch_id`, then send it. A failed send
    is taken back, so the next sweep tries again."""
    message_id = uuid.uuid4().hex
    current = Run.dispatch_id.is_(None) if expected_dispatch_id is None else Run.dispatch_id == expected_dispatch_id
    with session_scope() as session:
        taken = rowcount(session.execute(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.queued, current)
            .values(dispatched_at=utcnow(), dispatch_id=message_id, dispatch_epoch=epoch)
        ))
    if not taken:
        return False
    try:
        broker.send(run_id, queue, message_id)
    except Exception:
        with session_scope() as session:
            session.execute(update(Run).where(Run.id == run_id, Run.dispatch_id == message_id)
                            .values(dispatched_at=None, dispatch_id=None, dispatch_epoch=None))
        raise
    return True


def _queued(*conditions: ColumnElement[bool]) -> list[tuple[int, str, str | None]]:
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.queue, Run.dispatch_id)
            .where(Run.status == RunStatus.queued, Run.external.is_(False), *conditions)
            .order_by(Run.queued_at, Run.id)
        )
        return list(rows.tuples())


def dispatch_unsent(broker: Broker, queue: str | None = None) -> list[int]:
    """Send the queued runs that have no message yet, oldest first (a new run, and any queued while the broker was
    down, so that they start in the order they were queued). Raises when the broker is unreachable."""
    epoch = broker.epoch()
    conditions = [Run.dispatch_id.is_(None)] + ([Run.queue == queue] if queue is not None else [])
    return [run_id for run_id, run_queue, _ in _queued(*conditions) if _send(broker, run_id, run_queue, epoch, None)]


def _try_lock(name: str) -> str | None:
    key = f"{get_settings().redis_namespace}:lock:{name}"
    token = uuid.uuid4().hex
    return token if get_redis().set(key, token, nx=True, ex=RECONCILE_LOCK_TTL_S) else None


def _unlock(name: str, token: str) -> None:
    key = f"{get_settings().redis_namespace}:lock:{name}"
    redis = get_redis()
    if redis.get(key) == token:
        redis.delete(key)


def reconcile(broker: Broker) -> Reconciliation:
    """One sweep: send what has no message in the broker's current epoch, and re-send what the broker lost. One API
    process at a time reconciles (a Redis lock), so re-sent runs keep their order."""
    result = Reconciliation()
    token = _try_lock("reconcile")
    if token is None:
        return result
    try:
        result.epoch = epoch = broker.epoch()
        for run_id, queue, dispatch_id in _queued(or_(Run.dispatch_id.is_(None), Run.dispatch_epoch != epoch)):
            if _send(broker, run_id, queue, epoch, dispatch_id):
                (result.never_sent if dispatch_id is None else result.older_epoch).append(run_id)
        result.message_gone = _resend_lost(broker, epoch)
        result.discarded = _discard_stale(broker)
    finally:
        _unlock("reconcile", token)
    if result.discarded:
        log.info("stale messages removed from the broker (runs no longer waiting for them): %s", result.discarded)
    for reason, run_ids in (("never sent", result.never_sent), ("sent before Redis lost its data", result.older_epoch),
                            ("no longer in the broker", result.message_gone)):
        if run_ids:
            log.warning("queued runs sent again (%s): %s", reason, run_ids)
    return result


def _resend_lost(broker: Broker, epoch: str) -> list[int]:
    cutoff = utcnow() - timedelta(seconds=MESSAGE_CHECK_AFTER_S)
    old = _queued(Run.dispatch_epoch == epoch, Run.dispatched_at < cutoff)
    if not old:
        return []
    queues = {queue for _, queue, _ in old}
    held = {queue: broker.held_message_ids(queue) for queue in queues}
    missing = [(run_id, queue, dispatch_id) for run_id, queue, dispatch_id in old if dispatch_id not in held[queue]]
    if not missing:
        return []
    time.sleep(SECOND_LOOK_S)  # see SECOND_LOOK_S; this runs in the reaper's thread, never in a request
    held = {queue: broker.held_message_ids(queue) for queue in {queue for _, queue, _ in missing}}
    return [run_id for run_id, queue, dispatch_id in missing
            if dispatch_id not in held[queue] and _send(broker, run_id, queue, epoch, dispatch_id)]


# Runs finished longer ago than this have had their stale messages removed by earlier sweeps: their queues are not
# looked at again on their account.
STALE_LOOKBACK = timedelta(days=1)
# When this process first saw each stale message (message id -> monotonic time).
_stale_since: dict[str, float] = {}


def _discard_stale(broker: Broker) -> list[int]:
    """Remove the messages no run waits for: a run canceled (or finished) while its message still waited, and the
    delivery a dead worker held unacknowledged, which the broker would otherwise keep for the whole visibility timeout
    (days) and then deliver again, only to be dropped. A message is kept while it is its run's current dispatch and the
    run is queued or running (claimed runs keep their dispatch_id). One is removed only once seen stale for
    `stale_message_grace_s`: a worker takes a message within moments and drops a stale one itself (a duplicate delivery
    costs it milliseconds), so the sweep clears only what would otherwise linger.

    The broker is read before SQL: a message is recorded in SQL before it is sent (_send), so every message read
    here is already known there, and a message sent meanwhile is not read, so not removed."""
    with session_scope() as session:
        queues = set(session.scalars(
            select(Run.queue).distinct().where(Run.external.is_(False), or_(
                Run.status.in_((RunStatus.queued, RunStatus.running)), Run.finished_at > utcnow() - STALE_LOOKBACK))))
    if not queues:
        return []
    held = broker.held_train_messages(queues)
    if not held:
        _stale_since.clear()
        return []
    with session_scope() as session:
        current = {run_id: dispatch_id for run_id, dispatch_id in session.execute(
            select(Run.id, Run.dispatch_id).where(Run.id.in_(set(held.values())),
                                                  Run.status.in_((RunStatus.queued, RunStatus.running))))}
    stale = {message_id: run_id for message_id, run_id in held.items() if current.get(run_id) != message_id}
    now, grace_s = time.monotonic(), get_settings().stale_message_grace_s
    for message_id in set(_stale_since) - set(stale):
        del _stale_since[message_id]  # taken by a worker meanwhile
    due = {message_id: run_id for message_id, run_id in stale.items()
           if now - _stale_since.setdefault(message_id, now) >= grace_s}
    if not due:
        return []
    broker.discard_messages(queues, set(due))
    for message_id in due:
        del _stale_since[message_id]
    return sorted(set(due.values()))
