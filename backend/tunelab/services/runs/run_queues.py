"""The training queues a deployment declares (TUNELAB_RUN_QUEUES): a run is sent to one of them or refused, so that
no run waits forever on a queue nobody consumes, and none trains on the inference worker that answers the playground.
"""

import logging
from dataclasses import dataclass

from sqlalchemy import update

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.services.live import events
from tunelab.services.runs import workers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeclaredQueue:
    name: str
    default: bool
    workers: int | None  # workers seen consuming it now; None when Redis cannot say


def checked_queue(settings: Settings, queue: str | None) -> str:
    """The queue a run is sent to: `queue` when the deployment declares it, the default one when none is named."""
    if queue is None:
        return settings.default_queue
    declared = settings.run_queue_list
    if queue in declared:
        return queue
    allowed = ", ".join(declared)
    why = ("is the inference queue, whose worker answers the playground"
           if queue == settings.infer_queue else "is not a training queue of this server")
    message = f"{queue!r} {why}; choose one of {allowed}"
    raise AppError("VALIDATION_ERROR", f"queue: {message}",
                   [{"field": "queue", "message": message, "allowed": declared}])


def list_queues(settings: Settings) -> list[DeclaredQueue]:
    """Every declared training queue, in the declared order, with the number of workers seen on each."""
    try:
        present = workers.list_workers()
    except Exception:  # noqa: BLE001  (Redis away: the queues are still declared; their workers are unknown)
        log.warning("could not read the workers to count them per queue", exc_info=True)
        counts: dict[str, int] | None = None
    else:
        counts = {name: sum(name in worker["queues"] for worker in present) for name in settings.run_queue_list}
    return [DeclaredQueue(name=name, default=name == settings.default_queue,
                          workers=None if counts is None else counts[name]) for name in settings.run_queue_list]


def worker_refusal(settings: Settings, queues: list[str]) -> str | None:
    """Why a worker must not consume `queues`, or None. The inference queue needs a worker of its own: a worker that
    also consumes a training queue trains there for hours while the playground's requests wait behind the run."""
    training = [queue for queue in queues if queue != settings.infer_queue]
    if settings.infer_queue not in queues or not training:
        return None
    return (f"the inference queue {settings.infer_queue!r} needs a worker of its own, not one that also trains "
            f"({', '.join(training)}): start `tunelab worker --queues {settings.infer_queue}` and "
            f"`tunelab worker --queues {','.join(training)}`")


def worker_warnings(settings: Settings, queues: list[str]) -> list[str]:
    """What a worker consuming `queues` should tell its operator: training queues this install does not declare get
    no run unless the API's TUNELAB_RUN_QUEUES names them (the API may run elsewhere, with settings of its own)."""
    declared = settings.run_queue_list
    return [f"queue {queue!r} is not one of TUNELAB_RUN_QUEUES ({', '.join(declared)}) here: no run is sent to it "
            "unless the API's TUNELAB_RUN_QUEUES names it" for queue in queues
            if queue != settings.infer_queue and queue not in declared]


def refuse_training_here(settings: Settings, run_id: int) -> None:
    """The inference worker got a run to train: one queued on the inference queue before such runs were refused at
    launch. It fails with the reason instead of training there while the playground's requests wait."""
    reason = (f"queue {settings.infer_queue!r} is the inference queue, whose worker answers the playground and trains "
              f"no runs; clone the run onto one of {', '.join(settings.run_queue_list)}")
    with session_scope() as session:
        failed = session.execute(update(Run).where(Run.id == run_id, Run.status == RunStatus.queued)
                                 .values(status=RunStatus.failed, status_reason=reason, finished_at=utcnow()))
        if rowcount(failed):
            events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.failed.value})
            log.warning("run %s was sent to the inference queue: failed, not trained", run_id)
