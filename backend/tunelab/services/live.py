"""The live stream of one run as Server-Sent Events: replay from SQL after Last-Event-ID, then follow the
Redis notifications, with keep-alives, ending with the final status. Event ids are metric flush numbers
(seq), so a reconnecting client resumes exactly where it stopped."""

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator, Callable

from anyio import to_thread

from tunelab.core.redis import get_async_redis
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.db.session import get_sessionmaker
from tunelab.services import metrics, runs
from tunelab.services.events import run_channel

KEEPALIVE_S = 15.0
REPLAY_BATCH = 20_000
# How often a stream opened through a share link re-checks that the link is still live.
ACCESS_RECHECK_S = 2.0


def _json_value(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _format(event: str, data, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _read_new_points(run_id: int, after_seq: int) -> list[tuple[int, str, int, float, float]]:
    with get_sessionmaker()() as session:
        return metrics.points_after(session, run_id, after_seq, REPLAY_BATCH)


def _read_status(run_id: int) -> dict:
    with get_sessionmaker()() as session:
        return runs.to_public(session, runs.get_run(session, run_id)).model_dump(mode="json")


def _metric_events(points) -> tuple[list[str], int | None]:
    """One SSE event per flush (seq), so each event id is exact."""
    out, last_seq, group, current = [], None, [], None
    for seq, key, step, value, wall_time in points:
        if current is not None and seq != current:
            out.append(_format("metrics", group, current))
            group = []
        current = seq
        group.append({"key": key, "step": step, "value": _json_value(value), "wall_time": wall_time})
        last_seq = seq
    if group:
        out.append(_format("metrics", group, current))
    return out, last_seq


async def run_events(run_id: int, last_event_id: int,
                     still_allowed: Callable[[], bool] | None = None) -> AsyncIterator[str]:
    """`still_allowed` (a blocking check, run off the loop) ends the stream with a `revoked` event once it is
    false: a share link revoked while its page is open stops streaming within ACCESS_RECHECK_S."""
    redis = get_async_redis()
    pubsub = redis.pubsub(ignore_subscribe_messages=True)
    # Subscribe before the replay so that nothing written between the two is missed.
    await pubsub.subscribe(run_channel(run_id))
    sent_seq = last_event_id
    try:
        yield "retry: 2000\n\n"

        async def drain() -> list[str]:
            nonlocal sent_seq
            chunks: list[str] = []
            while True:
                points = await to_thread.run_sync(_read_new_points, run_id, sent_seq)
                if not points:
                    return chunks
                events, last = _metric_events(points)
                chunks.extend(events)
                sent_seq = last
                if len(points) < REPLAY_BATCH:
                    return chunks

        for chunk in await drain():
            yield chunk
        status = await to_thread.run_sync(_read_status, run_id)
        yield _format("status", status)
        wait_s = ACCESS_RECHECK_S if still_allowed else KEEPALIVE_S
        last_sent = last_check = time.monotonic()
        while status["status"] not in FINISHED_STATUSES:
            try:
                message = await asyncio.wait_for(pubsub.get_message(timeout=wait_s), wait_s + 1)
            except TimeoutError:
                message = None
            if still_allowed is not None and time.monotonic() - last_check >= ACCESS_RECHECK_S:
                last_check = time.monotonic()
                if not await to_thread.run_sync(still_allowed):
                    yield _format("revoked", {"message": "this share link is no longer valid"})
                    return
            if message is None:
                if time.monotonic() - last_sent >= KEEPALIVE_S - 0.5:
                    last_sent = time.monotonic()
                    yield ": keep-alive\n\n"
                continue
            last_sent = time.monotonic()
            kind = json.loads(message["data"]).get("type")
            if kind == "metrics":
                for chunk in await drain():
                    yield chunk
            elif kind in ("status", "progress", "cancel"):
                status = await to_thread.run_sync(_read_status, run_id)
                if status["status"] in FINISHED_STATUSES:
                    for chunk in await drain():  # the last flush lands before the final status
                        yield chunk
                yield _format("status", status)
        yield _format("end", {"status": status["status"]})
    finally:
        await pubsub.unsubscribe()
        await pubsub.aclose()
        await redis.aclose()
