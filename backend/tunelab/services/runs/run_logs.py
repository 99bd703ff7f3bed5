"""Reading a run's worker log: a byte-offset cursor for paging forward, or the tail."""

from tunelab.core.settings import Settings
from tunelab.core.store import get_store, run_key
from tunelab.schemas.runs import RunLogPublic
from tunelab.services.runs.artifacts import RUN_LOG_NAME

MAX_CHUNK_BYTES = 256 * 1024


def read_log(settings: Settings, run_id: int, offset: int | None, tail_bytes: int) -> RunLogPublic:
    store = get_store(settings)
    key = run_key(run_id, RUN_LOG_NAME)
    size = store.size(key)
    if size is None:
        return RunLogPublic(text="", offset=0, next_offset=0, size=0)
    start = max(0, size - tail_bytes) if offset is None else min(offset, size)
    try:
        chunk = b"".join(store.read_chunks(key, start, min(MAX_CHUNK_BYTES, size - start))) if start < size else b""
    except FileNotFoundError:  # removed between the two looks (its run deleted)
        chunk = b""
    if offset is None and start > 0:
        # A tail starts mid-line; drop the partial first line.
        newline = chunk.find(b"\n")
        if newline != -1:
            start, chunk = start + newline + 1, chunk[newline + 1 :]
    return RunLogPublic(text=chunk.decode("utf-8", errors="replace"), offset=start, next_offset=start + len(chunk),
                        size=size)
