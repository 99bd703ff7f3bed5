"""Replay for live views: the points of the flushes after a flush number, in flush order, of one run or many."""


from sqlalchemy import (
    and_,
    or_,
    select,
)
from sqlalchemy.orm import Session

from tunelab.services.metrics.packing import chunk_points
from tunelab.services.metrics.records import SequencedPoint, chunk_table


def points_after(session: Session, run_id: int, after_seq: int, limit: int) -> list[SequencedPoint]:
    """Points of flushes after `after_seq`, in flush order: what a reconnecting live view missed."""
    return [point for _, point in points_after_many(session, {run_id: after_seq}, limit)]


def points_after_many(session: Session, after: dict[int, int], limit: int) -> list[tuple[int, SequencedPoint]]:
    """(run_id, point) of every run in `after` past its flush number, ordered by run, flush, key and step, `limit`
    points at most: a range of metric_chunk's primary key per run. The chunks needed are found first, from their
    counts, so that a replay from far behind reads only what it returns."""
    chunk = chunk_table.c
    counts = session.execute(
        select(chunk.run_id, chunk.seq, chunk.count)
        .where(or_(*(and_(chunk.run_id == run_id, chunk.seq > seq) for run_id, seq in after.items())))
        .order_by(chunk.run_id, chunk.seq, chunk.key)
        .limit(limit)  # every chunk holds a point at least
    ).all()
    last_needed: dict[int, int] = {}
    covered = 0
    for run_id, seq, count in counts:
        last_needed[run_id] = seq
        covered += count
        if covered >= limit:
            break
    if not last_needed:
        return []
    chunks = session.execute(
        select(chunk.run_id, chunk.seq, chunk.key, chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
        .where(or_(*(and_(chunk.run_id == run_id, chunk.seq > after[run_id], chunk.seq <= last_seq)
                     for run_id, last_seq in last_needed.items())))
        .order_by(chunk.run_id, chunk.seq, chunk.key)
    )
    replay: list[tuple[int, SequencedPoint]] = []
    for run_id, seq, key, *packed in chunks:
        steps, values, wall_times = chunk_points([packed])
        replay.extend((run_id, SequencedPoint(seq, key, *point))
                      for point in zip(steps, values, wall_times, strict=True))
        if len(replay) >= limit:
            break
    del replay[limit:]
    return replay
