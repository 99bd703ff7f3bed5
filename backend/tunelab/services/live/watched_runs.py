"""Which runs someone watches live, known to each API process without asking Redis, so that a batch of a run
nobody watches (an SDK logging from a cluster, a script logging point by point) publishes no metrics notice that
every API process's live hub would hear and drop. Such a notice cost about 0.35 ms of API CPU per request, more
than storing a small batch.

Each LiveHub announces the runs it has feeds for on channel `<namespace>:watch`: a new feed before its first read,
every feed every RENEW_S, and every feed at once when another hub asks (ASK, sent by a hub that has just started
hearing the channel). Every hub hears that channel on its one subscription and remembers each announced run for
WATCH_TTL_S. A process that started hearing less than ANSWER_WAIT_S ago, or is not hearing, counts every run as
watched, so a notice is never skipped on a guess. Processes without a hub (workers) always publish.

A viewer cannot miss a flush: a hub announces a new feed before it reads where the feed starts, and a writer
decides after its commit, so a flush committed before another process heard the announcement is found by that read.
Status and stop notices are never skipped.
"""

import logging
import threading
import time
from collections.abc import Iterable

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings

log = logging.getLogger(__name__)

RENEW_S = 5.0
WATCH_TTL_S = 3 * RENEW_S  # two renewals may be lost before a watched run is forgotten
ASK = "?"
ANSWER_WAIT_S = 1.0  # for every hub's answer to ASK

_lock = threading.Lock()
_watched_until: dict[int, float] = {}  # run id -> time.monotonic() until which it counts as watched
_hearing_since: float | None = None


def channel() -> str:
    return f"{get_settings().redis_namespace}:watch"


def announce(run_ids: Iterable[int]) -> None:
    """Tell every API process that these runs are watched (blocking: call it off the event loop)."""
    ids = ",".join(map(str, run_ids))
    if not ids:
        return
    try:
        get_redis().publish(channel(), ids)
    except Exception:  # noqa: BLE001  (Redis away: no process hears anything, and each counts every run as watched)
        log.warning("could not announce watched runs on %s", channel(), exc_info=True)


def ask() -> None:
    """Ask every hub to announce its feeds now (blocking)."""
    try:
        get_redis().publish(channel(), ASK)
    except Exception:  # noqa: BLE001  (then nothing is heard either, and every run counts as watched)
        log.warning("could not ask for watched runs on %s", channel(), exc_info=True)


def heard(data: str) -> bool:
    """Note an announcement; True when it was ASK, which the hub answers by announcing its feeds."""
    if data == ASK:
        return True
    until = time.monotonic() + WATCH_TTL_S
    try:
        ids = [int(part) for part in data.split(",")]
    except ValueError:
        return False
    with _lock:
        for run_id in ids:
            _watched_until[run_id] = until
        if len(_watched_until) > 100_000:  # long-gone feeds, dropped from time to time
            now = time.monotonic()
            for run_id in [run_id for run_id, end in _watched_until.items() if end <= now]:
                del _watched_until[run_id]
    return False


def hearing(on: bool) -> None:
    """The hub's subscription to the channel started (True) or ended (False)."""
    global _hearing_since
    with _lock:
        _hearing_since = time.monotonic() if on else None
        _watched_until.clear()


def watched(run_id: int) -> bool:
    """Whether a metrics notice of this run may have a viewer; True whenever this process cannot tell."""
    since = _hearing_since
    now = time.monotonic()
    if since is None or now - since < ANSWER_WAIT_S:
        return True
    until = _watched_until.get(run_id)
    return until is not None and until > now
