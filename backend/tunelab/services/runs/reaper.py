"""Housekeeping that keeps SQL and the queue honest when processes die: runs whose worker stopped beating go back to
the queue to resume from their checkpoint (or fail, after a bounded number of tries), and queued runs whose message
is gone are sent again (services.runs.queue); launches' Idempotency-Keys past their time are forgotten
(services.runs.idempotency). A pipeline whose stage ended without being moved on (its worker died first, or the
reaper failed it) launches its next stage or cancels the rest (services.runs.pipelines). Safe to run in several
processes at once."""

import logging
import threading

from tunelab.core.settings import Settings
from tunelab.db.session import session_scope
from tunelab.services.runs import idempotency, lifecycle, pipelines, queue
from tunelab.services.runs.queue import Broker

log = logging.getLogger(__name__)


def sweep(settings: Settings, broker: Broker) -> None:
    with session_scope() as session:
        for run_id, status in lifecycle.reap_lost_runs(session, settings).items():
            log.warning("run %s: %s; now %s", run_id, lifecycle.WORKER_LOST, status.value)
    with session_scope() as session:
        for run in pipelines.advance_all(session, settings, None):
            log.info("pipeline stage launched by the sweep: run %s", run.id)
    try:
        queue.reconcile(broker)
    except Exception as exc:  # noqa: BLE001  (the broker is down: nothing can be sent; queued runs wait in SQL)
        # One line, not a traceback every sweep while Redis is down; but said, so that a bug here is seen too.
        log.warning("queue not reconciled this sweep: %s: %s", type(exc).__name__, exc)
    with session_scope() as session:
        idempotency.purge_expired(session, settings)


def start_reaper(settings: Settings, broker: Broker) -> threading.Event:
    """Sweep every reaper_interval_s in a daemon thread; set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(settings.reaper_interval_s):
            try:
                sweep(settings, broker)
            except Exception:  # noqa: BLE001  (database briefly away; try again next round)
                log.warning("reaper sweep failed", exc_info=True)

    threading.Thread(target=loop, name="reaper", daemon=True).start()
    return stop
