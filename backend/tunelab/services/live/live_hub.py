"""One Redis subscription per API process, fanned out to every live stream of every run.

The hub holds one subscription: PSUBSCRIBE `<namespace>:run:*` (and the channels of changed rights, principal_cache,
and of watched runs, watched_runs, where it also announces its feeds).
For each run that someone is watching it keeps a feed: the run's recent flushes as ready-to-send SSE events, by
flush number (`metric_seq`), and its latest status. Notifications mark feeds due; one SQL read (in one session,
for every due feed of every run) follows a short gathering delay, and what it reads is formatted once and served
to every stream of the run. Streams wait on their feed: an idle stream holds no database connection and no
thread. Reads run on a small thread limiter of their own, so live viewers never take the threads that requests
need. While Redis is unreachable, the feeds are read every `live_poll_interval_s` until the subscription is back;
each (re)subscription starts with one catch-up read."""

import asyncio
import json
import logging
import math
import re
import signal
import threading
import time
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

import anyio
from anyio import to_thread
from redis.client import PubSub
from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.redis import get_redis
from tunelab.core.settings import Settings
from tunelab.db.models.run import FINISHED_STATUSES, Run
from tunelab.db.session import get_sessionmaker
from tunelab.schemas.metrics import MAX_POINTS_PER_BATCH
from tunelab.services import metrics
from tunelab.services.accounts import principal_cache, shares
from tunelab.services.live import watched_runs
from tunelab.services.runs import runs

log = logging.getLogger(__name__)

# A read is capped; more than one batch holds, so a read cut short still ends with at least one whole flush.
READ_LIMIT = 2 * MAX_POINTS_PER_BATCH
# Flushes a feed keeps in memory (10 per second is a fast run): a stream further behind reads SQL on its own.
FEED_FLUSHES = 1_000
# A share link's state is read at most this often per link, however many streams it has open.
LINK_CACHE_S = 0.5
# A silent subscription is pinged after PING_AFTER_S and given up as lost after SILENT_LIMIT_S.
PING_AFTER_S = 5.0
SILENT_LIMIT_S = 15.0
READ_TIMEOUT_S = 1.0  # how long the subscription thread may take to notice that the hub stopped
# A notification waits this long for others to share its read (a trainer flushes every second; a chart animates
# at 60 Hz): at 200 flushes a second over 20 runs, about 30 reads a second instead of 200.
GATHER_S = 0.05
STATUS_NOTICES = frozenset({"status", "progress", "phase", "cancel", "force_stop"})

T = TypeVar("T")
Flush = tuple[int, str]  # (flush number, its SSE event)


def sse(event: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _json_value(value: float) -> float | None:
    return value if math.isfinite(value) else None


def flush_events(points: Sequence[metrics.SequencedPoint], whole: bool) -> list[Flush]:
    """One `metrics` event per flush, so each event id is exact. A read cut at READ_LIMIT may end inside a flush:
    unless the read is `whole`, its last flush is left for the next read."""
    flushes: list[Flush] = []
    group: list[dict] = []
    current = -1
    for seq, key, step, value, wall_time in points:
        if group and seq != current:
            flushes.append((current, sse("metrics", group, current)))
            group = []
        current = seq
        group.append({"key": key, "step": step, "value": _json_value(value), "wall_time": wall_time})
    if group and whole:
        flushes.append((current, sse("metrics", group, current)))
    return flushes


def read_flushes(run_id: int, after_seq: int) -> tuple[list[Flush], bool]:
    """The run's flushes after `after_seq` and whether that was all of them (blocking; its own short session)."""
    with get_sessionmaker()() as session:
        points = metrics.points_after(session, run_id, after_seq, READ_LIMIT)
    whole = len(points) < READ_LIMIT
    return flush_events(points, whole), whole


@dataclass
class FeedRead:
    """What one batch read found for one run: its status (if asked; None when the run is gone) and new flushes."""

    status: dict | None = None
    flushes: list[Flush] = field(default_factory=list)
    whole: bool = True

    @property
    def finished(self) -> bool:
        return self.status is not None and self.status["status"] in FINISHED_STATUSES


def _new_points(session: Session, after: dict[int, int]) -> tuple[dict[int, list[metrics.SequencedPoint]], int | None]:
    """The points of every run in `after` past its flush number, in one query (one round trip for all the runs),
    and the run the read stopped in when it hit READ_LIMIT (that run's last flush may be cut; later runs got none)."""
    rows = metrics.points_after_many(session, after, READ_LIMIT)
    by_run: dict[int, list[metrics.SequencedPoint]] = {}
    for run_id, point in rows:
        by_run.setdefault(run_id, []).append(point)
    return by_run, rows[-1][0] if len(rows) == READ_LIMIT else None


def announce_and_read_feeds(new_feeds: list[int], asks: list[tuple[int, int | None, bool, bool]]
                            ) -> dict[int, FeedRead]:
    watched_runs.announce(new_feeds)
    return read_feeds(asks)


def read_feeds(asks: list[tuple[int, int | None, bool, bool]]) -> dict[int, FeedRead]:
    """One session for every feed that is due: (run_id, seq it has or None before its first read, points due,
    status due). Statuses are read first: a run's last flush is committed before its final status, so a final
    status always comes with the points before it."""
    with get_sessionmaker()() as session:
        status_ids = [run_id for run_id, _, _, status_due in asks if status_due]
        rows = list(session.scalars(select(Run).where(Run.id.in_(status_ids)))) if status_ids else []
        statuses = {public.id: public.model_dump(mode="json") for public in runs.to_public_many(session, rows)}
        found = {run_id: FeedRead(status=statuses.get(run_id)) for run_id, _, _, _ in asks}
        after = {
            run_id: seq for run_id, seq, points_due, _ in asks
            if seq is not None and (points_due or found[run_id].finished)
        }
        if after:
            by_run, cut_in = _new_points(session, after)
            for run_id in after:
                # The run the read was cut in, and those after it (which got nothing), are read again at once.
                whole = cut_in is None or run_id < cut_in
                found[run_id].flushes = flush_events(by_run.get(run_id, []), whole)
                found[run_id].whole = whole
    return found


class RunFeed:
    """What every stream of one run is sent: its flushes in (base_seq, seq], and its latest status."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.streams = 0
        self.base_seq = 0
        self.seq = 0
        self.status: dict | None = None
        self.status_event = ""
        self.status_version = 0
        self.gone = False  # the run was deleted
        self.points_due = False
        self.status_due = True  # a feed's first read is a status read: it says where the feed starts
        self.announced = False  # to every API process as watched (services/live/watched_runs), before that read
        self._seqs: list[int] = []
        self._events: list[str] = []
        self._changed = asyncio.Event()

    @property
    def ready(self) -> bool:
        return self.status is not None

    @property
    def finished(self) -> bool:
        return self.status is not None and self.status["status"] in FINISHED_STATUSES

    def changed(self) -> asyncio.Event:
        """Set at the feed's next change. Take it before reading the feed, so that no change is missed."""
        return self._changed

    def events_after(self, seq: int) -> tuple[str, int]:
        """The SSE text of the flushes after `seq` this feed holds, and the number of the last one."""
        start = bisect_right(self._seqs, seq)
        if start == len(self._seqs):
            return "", seq
        return "".join(self._events[start:]), self._seqs[-1]

    def notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def ask(self) -> tuple[int, int | None, bool, bool]:
        asked = (self.run_id, self.seq if self.ready else None, self.points_due, self.status_due)
        self.points_due = self.status_due = False
        return asked

    def apply(self, read: FeedRead, status_asked: bool) -> None:
        if status_asked and read.status is None:
            self.gone = True
        elif read.status is not None and self.status is None:
            # Every flush up to the run's counter is in SQL now; later flushes come through this feed.
            self.base_seq = self.seq = read.status["metric_seq"]
        for seq, event in read.flushes:
            self._seqs.append(seq)
            self._events.append(event)
        if read.flushes:
            self.seq = read.flushes[-1][0]
        self.points_due |= not read.whole
        if len(self._seqs) > 2 * FEED_FLUSHES:
            cut = len(self._seqs) - FEED_FLUSHES
            self.base_seq = self._seqs[cut - 1]
            del self._seqs[:cut], self._events[:cut]
        if read.status is not None:
            self.status = read.status
            self.status_event = sse("status", read.status)
            self.status_version += 1
        self.notify()


_running: "weakref.WeakSet[LiveHub]" = weakref.WeakSet()


def end_all_streams() -> None:
    """Safe from a signal handler or another thread: every hub of this process ends its streams."""
    for hub in list(_running):
        hub.end_streams_soon()


def end_streams_on_exit_signals() -> None:
    """Put ending every stream (with its short retry hint) in front of the server's own SIGTERM and SIGINT handlers,
    so that browsers move to the next API process at once instead of holding this one through its graceful wait.
    For the server's main thread, after it installed its handlers (uvicorn has when the app's lifespan starts);
    elsewhere (a test client's thread) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        if not callable(previous) or getattr(previous, "ends_streams", False):
            continue

        def handler(number: int, frame: FrameType | None, previous: Callable = previous) -> None:
            end_all_streams()
            previous(number, frame)

        handler.ends_streams = True  # type: ignore[attr-defined]
        signal.signal(signum, handler)


class LiveHub:
    """The process's live notifications: one Redis subscription, one feed per watched run, shared reads.

    The subscription is followed by a thread of its own with the synchronous client (a blocking read with a
    timeout; asyncio redis-py can lose a cancellation that lands while it connects, which would hang shutdown);
    what it hears is handed to the event loop in batches."""

    def __init__(self, settings: Settings) -> None:
        namespace = re.sub(r"([*?\[\]\\])", r"\\\1", settings.redis_namespace)
        self.pattern = f"{namespace}:run:*"
        self.poll_interval_s = settings.live_poll_interval_s
        self.reads: Counter[str] = Counter()  # SQL queries by kind: points, status, replay, link
        self.subscribed = False
        self.subscriptions = 0  # confirmed (re)subscriptions
        self.ending = False
        self._limiter = anyio.CapacityLimiter(settings.live_read_threads)
        self._feeds: dict[int, RunFeed] = {}
        self._links: dict[int, tuple[float, asyncio.Task[bool]]] = {}
        self._due = asyncio.Event()
        self._announce_now = asyncio.Event()  # another hub asked which runs are watched
        self._stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tasks = [asyncio.create_task(self._read_due(), name="live hub: reads"),
                       asyncio.create_task(self._poll_while_deaf(), name="live hub: polls"),
                       asyncio.create_task(self._renew_watches(), name="live hub: watches")]
        threading.Thread(target=self._subscribe, name="live hub", daemon=True).start()
        _running.add(self)

    async def stop(self) -> None:
        self.end_streams()
        _running.discard(self)
        self._stopped.set()  # the thread leaves within its read timeout; nothing waits for it
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def end_streams(self) -> None:
        """Every stream sends its retry hint and closes; streams opened from now on do the same at once."""
        self.ending = True
        for feed in list(self._feeds.values()):
            feed.notify()

    def end_streams_soon(self) -> None:
        self._call_soon(self.end_streams)

    def attach(self, run_id: int) -> RunFeed:
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(run_id)
            self._due.set()
        feed.streams += 1
        return feed

    def detach(self, feed: RunFeed) -> None:
        feed.streams -= 1
        if feed.streams == 0 and self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]

    async def read(self, kind: str, fn: Callable[..., T], *args: Any) -> T:
        """A blocking SQL read on the hub's own threads."""
        self.reads[kind] += 1
        return await to_thread.run_sync(fn, *args, limiter=self._limiter)

    async def link_active(self, link_id: int) -> bool:
        """Whether a share link is still valid, read at most once per LINK_CACHE_S for all of its streams."""
        now = time.monotonic()
        cached = self._links.get(link_id)
        if cached is None or now - cached[0] >= LINK_CACHE_S:
            if len(self._links) > 1000:
                self._links = {k: v for k, v in self._links.items() if now - v[0] < LINK_CACHE_S}
            cached = (now, asyncio.create_task(self.read("link", shares.still_active, link_id)))
            self._links[link_id] = cached
        try:
            return await asyncio.shield(cached[1])
        except Exception:  # noqa: BLE001  (database away: nobody can revoke a link either; ask again next round)
            log.warning("could not check share link %s", link_id, exc_info=True)
            return True

    # Shared reads ----------------------------------------------------------------------------------------------

    def _mark(self, feed: RunFeed, points: bool, status: bool) -> None:
        feed.points_due |= points
        feed.status_due |= status
        if points or status:
            self._due.set()

    def _mark_all(self) -> None:
        for feed in list(self._feeds.values()):
            self._mark(feed, points=True, status=True)

    async def _read_due(self) -> None:
        """One read at a time for every feed that is due: notifications that arrive meanwhile, for any run, are
        served by the next one, so a burst of flushes over many runs costs a few reads, not one per flush."""
        while True:
            await self._due.wait()
            await asyncio.sleep(GATHER_S)
            self._due.clear()
            due = [feed for feed in self._feeds.values() if feed.points_due or feed.status_due]
            asks = [feed.ask() for feed in due]
            if not asks:
                continue
            # Writers skip the notices of runs nobody watches: a new feed is announced before its first read.
            unannounced = [feed.run_id for feed in due if not feed.announced]
            for feed in due:
                feed.announced = True
            try:
                found = await self.read("feeds", announce_and_read_feeds, unannounced, asks)
            except Exception:  # noqa: BLE001  (database briefly away: the streams wait, the feeds try again)
                log.warning("live feeds could not be read; retrying in %g s", self.poll_interval_s, exc_info=True)
                for feed, (_, _, points_due, status_due) in zip(due, asks, strict=True):
                    self._mark(feed, points_due, status_due)
                await asyncio.sleep(self.poll_interval_s)
                continue
            for feed, (_, _, points_due, status_due) in zip(due, asks, strict=True):
                read = found[feed.run_id]
                self.reads["status"] += status_due
                self.reads["points"] += bool(read.flushes) or points_due
                feed.apply(read, status_due)
                if feed.points_due:
                    self._due.set()

    async def _renew_watches(self) -> None:
        while True:
            with anyio.move_on_after(watched_runs.RENEW_S):
                await self._announce_now.wait()
            self._announce_now.clear()
            if self._feeds:
                await to_thread.run_sync(watched_runs.announce, list(self._feeds), limiter=self._limiter)

    async def _poll_while_deaf(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval_s)
            if not self.subscribed:
                self._mark_all()

    # The subscription (its own thread) -------------------------------------------------------------------------

    def _call_soon(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop closed: the app is gone
            self._stopped.set()

    def _subscribe(self) -> None:
        warned_after = -1
        while not self._stopped.is_set():
            pubsub = get_redis().pubsub()
            try:
                pubsub.psubscribe(self.pattern)
                pubsub.subscribe(principal_cache.channel(), watched_runs.channel())
                self._follow(pubsub)
            except Exception:  # noqa: BLE001  (Redis away: the feeds follow SQL until it is back)
                if warned_after != self.subscriptions:  # once per outage, not once per attempt
                    warned_after = self.subscriptions
                    log.warning("live notifications lost; reading SQL every %g s until Redis is back",
                                self.poll_interval_s, exc_info=True)
            finally:
                self._call_soon(setattr, self, "subscribed", False)
                try:
                    pubsub.close()
                except Exception:  # noqa: BLE001  (the connection is gone already)
                    pass
            self._stopped.wait(self.poll_interval_s)

    def _follow(self, pubsub: PubSub) -> None:
        hearing_rights = hearing_watches = False
        rights_channel, watch_channel = principal_cache.channel(), watched_runs.channel()
        heard = time.monotonic()
        try:
            while not self._stopped.is_set():
                batch = []
                message = pubsub.get_message(timeout=READ_TIMEOUT_S)
                while message is not None:
                    batch.append(message)
                    message = pubsub.get_message(timeout=0)
                now = time.monotonic()
                if not batch:
                    if now - heard > SILENT_LIMIT_S:
                        raise ConnectionError("Redis stopped answering the live subscription")
                    if now - heard > PING_AFTER_S:
                        pubsub.ping()
                    continue
                heard = now
                for message in batch:
                    if message["type"] == "message" and message["channel"] == watch_channel:
                        if watched_runs.heard(message["data"]):
                            self._call_soon(self._announce_now.set)
                    elif message["type"] == "message":
                        principal_cache.forget_all()
                    elif message["type"] == "subscribe" and message["channel"] == watch_channel:
                        hearing_watches = True
                        watched_runs.hearing(True)  # also after a re-subscription: what was missed is unknown
                        watched_runs.ask()
                    elif message["type"] == "subscribe" and message["channel"] == rights_channel:
                        # A re-subscription by redis-py itself may have missed a change: forget either way.
                        if not hearing_rights:
                            hearing_rights = True
                            principal_cache.hearing(True)
                        principal_cache.forget_all()
                self._call_soon(self._take, batch)
        finally:
            if hearing_rights:
                principal_cache.hearing(False)
            if hearing_watches:
                watched_runs.hearing(False)

    def _take(self, batch: list[dict]) -> None:
        for message in batch:
            if message["type"] == "pmessage":
                self._dispatch(message["channel"], message["data"])
            elif message["type"] == "psubscribe":
                # Also after redis-py re-subscribed on its own: what was published meanwhile is read now.
                self.subscribed = True
                self.subscriptions += 1
                self._mark_all()

    def _dispatch(self, channel: str, data: str) -> None:
        try:
            feed = self._feeds.get(int(channel.rsplit(":", 1)[1]))
            kind = json.loads(data).get("type") if feed is not None else None
        except (ValueError, AttributeError):
            return
        if feed is not None:
            self._mark(feed, points=kind == "metrics", status=kind in STATUS_NOTICES)
