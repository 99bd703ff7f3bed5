"""Housekeeping that keeps SQL honest when processes die: fail runs whose worker stopped beating, and re-send
runs that sit queued in SQL with no message left in Redis. Safe to run in several processes at once."""

import logging
import threading

from tunelab.core.settings import Settings
from tunelab.db.session import session_scope
from tunelab.services import runs

log = logging.getLogger(__name__)
REQUEUE_AFTER_S = 300.0


def sweep(settings: Settings, dispatch: runs.Dispatcher) -> None:
    with session_scope() as session:
        for run_id in runs.reap_lost_runs(session, settings.heartbeat_timeout_s):
            log.warning("run %s failed: %s", run_id, runs.WORKER_LOST)
        runs.requeue_stale(session, REQUEUE_AFTER_S, dispatch)


def start_reaper(settings: Settings, dispatch: runs.Dispatcher) -> threading.Event:
    """Sweep every reaper_interval_s in a daemon thread; set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(settings.reaper_interval_s):
            try:
                sweep(settings, dispatch)
            except Exception:  # noqa: BLE001  (database briefly away; try again next round)
                log.warning("reaper sweep failed", exc_info=True)

    threading.Thread(target=loop, name="reaper", daemon=True).start()
    return stop
