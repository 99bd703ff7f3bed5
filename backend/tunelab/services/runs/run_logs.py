"""Reading a run's worker log: a byte-offset cursor for paging forward, or the tail."""

from tunelab.core.settings import Settings
from tunelab.schemas.runs import RunLogPublic
from tunelab.services.runs.artifacts import RUN_LOG_NAME, run_dir

MAX_CHUNK_BYTES = 256 * 1024


def read_log(settings: Settings, run_id: int, offset: int | None, tail_bytes: int) -> RunLogPublic:
    path = run_dir(settings, run_id) / RUN_LOG_NAME
    if not path.is_file():
        return RunLogPublic(text="", offset=0, next_offset=0, size=0)
    size = path.stat().st_size
    start = max(0, size - tail_bytes) if offset is None else min(offset, size)
    with path.open("rb") as handle:
        handle.seek(start)
        chunk = handle.read(MAX_CHUNK_BYTES)
    if offset is None and start > 0:
        # A tail starts mid-line; drop the partial first line.
        newline = chunk.find(b"\n")
        if newline != -1:
            start, chunk = start + newline + 1, chunk[newline + 1 :]
    return RunLogPublic(text=chunk.decode("utf-8", errors="replace"), offset=start, next_offset=start + len(chunk),
                        size=size)
