"""The SDK's delivery of metric points, off the training thread.

`log()` only puts a point on a bounded in-memory queue. One background thread batches the queue (a POST every
`flush_interval_s`, or as soon as `batch_points` are waiting) and, while the server is unreachable, appends the
points to a JSONL spool file instead, retrying with exponential backoff; once the server answers again it sends
the spool (oldest first), then the new points. The server keeps the first point stored per (run, key, step), so a
batch that is sent twice (a reply lost on the way back) is stored once.
"""

import json
import logging
import math
import os
import queue
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from tunelab.client.config import open_private
from tunelab.client.http import ApiClient, NoAnswer, TunelabError

log = logging.getLogger("tunelab.client")

Point = tuple[str, int, float, float]  # key, step, value, wall time (Unix seconds)

MAX_POINTS_PER_REQUEST = 5_000  # the server takes 10,000
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0  # a refused connection costs little; a server back is noticed soon


def _json_number(value: float) -> float | str:
    # JSON has no literal for NaN or the infinities: the API takes them as these strings.
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _retryable(error: TunelabError) -> bool:
    """Unreachable, overloaded or restarting: worth sending again. A 4xx will be refused again."""
    return isinstance(error, NoAnswer) or error.status is None or error.status >= 500 or error.status == 429


class PointSender:
    """The background thread that delivers one run's points; `put` never blocks and never raises."""

    def __init__(self, api: ApiClient, run_id: int, spool_path: Path, flush_interval_s: float = 1.0,
                 batch_points: int = 1_000, max_queued: int = 100_000) -> None:
        self.api = api
        self.run_id = run_id
        self.spool_path = spool_path
        self.flush_interval_s = flush_interval_s
        self.batch_points = min(batch_points, MAX_POINTS_PER_REQUEST)
        self.delivered = 0  # points the server accepted (including ones it already had)
        self.rejected = 0  # points the server refused for good (a 4xx)
        self.dropped = 0  # points put while the queue was full
        self._queue: queue.Queue[Point] = queue.Queue(maxsize=max_queued)
        self._closing = threading.Event()
        self._close_deadline = 0.0
        # Only this thread writes the spool; one left by an earlier process of the same run is sent first.
        self._spooled = spool_path.exists() and spool_path.stat().st_size > 0
        self._backoff_s = 0.0
        self._retry_at = 0.0
        self._down_since: float | None = None
        self._warned_down = False
        self._warned_full = False
        self._thread = threading.Thread(target=self._loop, name=f"tunelab-run-{run_id}", daemon=True)
        self._thread.start()

    @property
    def server_down(self) -> bool:
        return self._down_since is not None

    def put(self, point: Point) -> None:
        try:
            self._queue.put_nowait(point)
        except queue.Full:
            self.dropped += 1
            if not self._warned_full:
                self._warned_full = True
                log.warning("tunelab: %d points are waiting to be sent; dropping new points until the queue drains",
                            self._queue.maxsize)

    def close(self, timeout_s: float) -> bool:
        """Send everything still queued or spooled, trying for up to `timeout_s`; True when nothing is left."""
        self._close_deadline = time.monotonic() + timeout_s
        self._retry_at = 0.0  # try at once, whatever the backoff
        self._closing.set()
        self._thread.join(timeout_s + 5)
        return self._queue.empty() and not self._has_spool()

    # The thread ---------------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        pending: list[Point] = []
        first_at = 0.0
        while True:
            closing = self._closing.is_set()
            wait = self.flush_interval_s - (time.monotonic() - first_at) if pending else self.flush_interval_s
            try:
                point = self._queue.get(timeout=max(wait, 0.0)) if not closing else self._queue.get_nowait()
                if not pending:
                    first_at = time.monotonic()
                pending.append(point)
                while len(pending) < self.batch_points:
                    pending.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            due = len(pending) >= self.batch_points or (pending and time.monotonic() - first_at >= self.flush_interval_s)
            if due or closing or (self._has_spool() and time.monotonic() >= self._retry_at):
                try:
                    self._deliver(pending)
                except Exception:  # noqa: BLE001 - a bug here must not end delivery (nor reach training)
                    log.exception("tunelab: could not deliver %d points; they are spooled", len(pending))
                    self._spool(pending)
                pending = []
            if closing and self._queue.empty():
                if not self._has_spool() or time.monotonic() >= self._close_deadline:
                    return
                time.sleep(max(0.0, min(self._retry_at - time.monotonic(), self._close_deadline - time.monotonic())))

    def _deliver(self, points: list[Point]) -> None:
        if time.monotonic() < self._retry_at:
            self._spool(points)
            return
        if self._has_spool() and not self._send_spool():
            self._spool(points)
            return
        for start in range(0, len(points), MAX_POINTS_PER_REQUEST):
            chunk = points[start:start + MAX_POINTS_PER_REQUEST]
            if not self._post(chunk):
                self._spool(points[start:])
                return

    def _post(self, points: list[Point]) -> bool:
        """True once the server has the points (or refused them for good); False to try again later."""
        body = json.dumps({"points": [{"key": key, "step": step, "value": _json_number(value), "wall_time": wall}
                                      for key, step, value, wall in points]}, separators=(",", ":"))
        try:
            self.api.post(f"/runs/{self.run_id}/metrics", content=body, headers={"Content-Type": "application/json"})
        except TunelabError as error:
            if _retryable(error):
                self._went_down(error)
                return False
            self.rejected += len(points)
            log.error("tunelab: the server refused %d points of run %d: %s", len(points), self.run_id, error)
            return True
        self.delivered += len(points)
        self._came_back()
        return True

    def _went_down(self, error: TunelabError) -> None:
        self._backoff_s = min(max(self._backoff_s * 2, FIRST_BACKOFF_S), MAX_BACKOFF_S)
        self._retry_at = time.monotonic() + self._backoff_s
        if self._down_since is None:
            self._down_since = time.monotonic()
            warn = log.info if self._warned_down else log.warning
            self._warned_down = True
            warn("tunelab: %s; points of run %d are kept in %s and sent when it answers again (training goes on)",
                 error.message, self.run_id, self.spool_path)

    def _came_back(self) -> None:
        if self._down_since is not None:
            log.info("tunelab: the server answers again after %.0f s; sending the spooled points",
                     time.monotonic() - self._down_since)
        self._down_since, self._backoff_s, self._retry_at = None, 0.0, 0.0

    # The spool ----------------------------------------------------------------------------------------------------

    def _has_spool(self) -> bool:
        return self._spooled

    def _spool(self, points: Iterable[Point]) -> None:
        lines = "".join(json.dumps(list(point)) + "\n" for point in points)
        if not lines:
            return
        # Readable by this user only, as the config file: metric values and run ids are the project's.
        with os.fdopen(open_private(self.spool_path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8") as spool:
            spool.write(lines)
        self._spooled = True

    def _send_spool(self) -> bool:
        """Send the spool oldest first; True when it is all delivered (and the file gone)."""
        points = read_spool(self.spool_path)
        for start in range(0, len(points), MAX_POINTS_PER_REQUEST):
            if not self._post(points[start:start + MAX_POINTS_PER_REQUEST]):
                # Keep what is not delivered yet: a later retry sends only that.
                rest = self.spool_path.with_suffix(".rest")
                with os.fdopen(open_private(rest, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as handle:
                    handle.write("".join(json.dumps(list(p)) + "\n" for p in points[start:]))
                os.replace(rest, self.spool_path)
                return False
        self.spool_path.unlink(missing_ok=True)
        self._spooled = False
        return True


def read_spool(path: Path) -> list[Point]:
    """The points of a spool file; a line cut short by a crash is skipped."""
    points: list[Point] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return points
    for line in text.splitlines():
        try:
            key, step, value, wall = json.loads(line)
            points.append((str(key), int(step), float(value), float(wall)))
        except (ValueError, TypeError):
            continue
    return points
