"""The live stream of one run as Server-Sent Events: what the client missed after its Last-Event-ID, then the
run's feed in the process's LiveHub, with keep-alives, ending with the final status. Event ids are flush numbers
(`metric_seq`), so a reconnecting client resumes exactly where it stopped, on this API process or another."""

import asyncio
import time
from collections.abc import AsyncIterator

from tunelab.services.live.live_hub import LiveHub, read_flushes, sse

KEEPALIVE_S = 15.0
RECONNECT_MS = 2000
# Sent when the API shuts down: browsers reconnect (to the next process) this soon instead of after RECONNECT_MS.
SHUTDOWN_RECONNECT_MS = 250
# How often a stream opened through a share link asks whether the link is still valid; with the hub's cache of
# LINK_CACHE_S (0.5 s), a revoked link ends its streams within 1.5 s and a read.
LINK_RECHECK_S = 1.0


async def run_events(hub: LiveHub, run_id: int, last_event_id: int,
                     share_link_id: int | None = None) -> AsyncIterator[str]:
    """A stream opened with a share link (`share_link_id`) ends with a `revoked` event once the link is revoked
    or expires."""
    feed = hub.attach(run_id)
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        sent_seq, sent_status = last_event_id, 0
        wait_s = LINK_RECHECK_S if share_link_id is not None else KEEPALIVE_S
        last_write = last_check = time.monotonic()
        while True:
            changed = feed.changed()
            if hub.ending:
                yield f"retry: {SHUTDOWN_RECONNECT_MS}\n\n"
                return
            if feed.gone:
                return
            out = ""
            if feed.ready:
                if sent_seq < feed.base_seq:
                    # Further behind than the feed remembers: catch up from SQL, on this stream's own reads.
                    base = feed.base_seq
                    flushes, whole = await hub.read("replay", read_flushes, run_id, sent_seq)
                    if flushes:
                        sent_seq = flushes[-1][0]
                        yield "".join(event for _, event in flushes)
                        last_write = time.monotonic()
                    if whole:
                        sent_seq = max(sent_seq, base)
                    continue
                out, sent_seq = feed.events_after(sent_seq)
                if feed.status_version != sent_status:
                    sent_status = feed.status_version
                    out += feed.status_event
                if feed.status is not None and feed.finished:
                    yield out + sse("end", {"status": feed.status["status"]})
                    return
            if out:
                yield out
                last_write = time.monotonic()
                continue
            try:
                async with asyncio.timeout(wait_s):
                    await changed.wait()
            except TimeoutError:
                pass
            now = time.monotonic()
            if share_link_id is not None and now - last_check >= LINK_RECHECK_S:
                last_check = now
                if not await hub.link_active(share_link_id):
                    yield sse("revoked", {"message": "this share link is no longer valid"})
                    return
            if now - last_write >= KEEPALIVE_S - 0.5:
                yield ": keep-alive\n\n"
                last_write = now
    finally:
        hub.detach(feed)
