"""Reading the history: a run's keys, capped and downsampled series (from rollups past a length), full-resolution
pages, and the export's keyset pages."""

from collections.abc import Iterator, Sequence
from itertools import groupby
from operator import itemgetter

from sqlalchemy import (
    ColumnElement,
    Row,
    func,
    select,
    tuple_,
)
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.services.metrics.batches import nan_min, nan_wins_max
from tunelab.services.metrics.downsample import ROLLUP_WIDTH, SeriesData, cells_per_bucket, downsample, uses_rollups
from tunelab.services.metrics.packing import chunk_points
from tunelab.services.metrics.records import MetricPoint, Series, chunk_table, rollup_table, run_table, summary_table


def list_keys(session: Session, run_id: int) -> list[str]:
    """The run's metric keys, sorted; from the summaries, so no history is scanned."""
    require_runs(session, [run_id])
    return list(
        session.scalars(select(summary_table.c.key).where(summary_table.c.run_id == run_id).order_by(summary_table.c.key))
    )


def read_series(session: Session, run_id: int, keys: list[str] | None, max_points: int) -> dict[str, SeriesData]:
    """The run's series (all keys when `keys` is None), each capped at `max_points`; unknown keys are left out."""
    return read_many(session, [run_id], keys, max_points)[run_id]


def read_page(
    session: Session, run_id: int, keys: list[str] | None, after_step: int, limit: int
) -> dict[str, SeriesData]:
    """Full resolution past any length: each series' points with step > `after_step`, `limit` at most, and where
    to continue (`next_after_step`, None at the end)."""
    require_runs(session, [run_id])
    condition = [summary_table.c.run_id == run_id]
    if keys is not None:
        condition.append(summary_table.c.key.in_(keys))
    counts = session.execute(
        select(summary_table.c.key, summary_table.c.count).where(*condition).order_by(summary_table.c.key)).all()
    pages = {}
    for key, count in counts:
        steps, values, wall_times = points_after_step(session, run_id, key, after_step, limit + 1)
        more = len(steps) > limit
        pages[key] = SeriesData(steps[:limit], values[:limit], wall_times[:limit], None, None, count,
                                next_after_step=steps[limit - 1] if more else None)
    return pages


def points_page(session: Session, run_id: int, after: tuple[str, int] | None, limit: int) -> list[MetricPoint]:
    """Every key's points in (key, step) order, `limit` at most, after the (key, step) `after`: the export's
    keyset pages, so a history of any length streams in bounded memory."""
    keys = select(summary_table.c.key).where(summary_table.c.run_id == run_id).order_by(summary_table.c.key)
    if after is not None:
        keys = keys.where(summary_table.c.key >= after[0])
    page: list[MetricPoint] = []
    for key in session.scalars(keys):
        after_step = after[1] if after is not None and key == after[0] else None
        steps, values, wall_times = points_after_step(session, run_id, key, after_step, limit - len(page))
        page.extend(zip([key] * len(steps), steps, values, wall_times, strict=True))
        if len(page) >= limit:
            break
    return page


def points_after_step(session: Session, run_id: int, key: str, after_step: int | None, limit: int) -> Series:
    """The first `limit` points of a key with step > `after_step` (any step when None), in step order. The key's
    chunks past `after_step` are taken in order of their first step, and only until no chunk left can hold a step
    before the `limit`-th found: a page reads about `limit` points, however long the series and however its
    flushes interleave."""
    chunk = chunk_table.c
    spans = _spans_by_first_step(session, run_id, key, after_step)
    found: list[tuple[int, float, float]] = []
    batch: list[int]
    pending = next(spans, None)
    while pending is not None:
        if len(found) >= limit and pending[0] > found[limit - 1][0]:
            break  # every chunk left starts after the limit-th point found
        wanted, batch = limit - len(found), []  # seqs of the chunks to read next
        while pending is not None and (wanted > 0 or not batch):  # enough chunks to fill the page, one at least
            batch.append(pending[1])
            wanted -= pending[2]
            pending = next(spans, None)
        steps, values, wall_times = chunk_points(session.execute(
            select(chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
            .where(chunk.run_id == run_id, chunk.key == key, chunk.seq.in_(batch))))
        found.extend(point for point in zip(steps, values, wall_times, strict=True)
                     if after_step is None or point[0] > after_step)
        found.sort(key=itemgetter(0))
        del found[limit:]  # a later chunk can only push these out
    return [point[0] for point in found], [point[1] for point in found], [point[2] for point in found]


SPANS_PER_READ = 256


def _spans_by_first_step(session: Session, run_id: int, key: str, after_step: int | None) -> Iterator[Row]:
    """(first_step, seq, count) of the key's chunks past `after_step`, in order of first step, read a few hundred
    at a time: the first point of a long series reads one such page, not a row per flush."""
    chunk = chunk_table.c
    condition = [chunk.run_id == run_id, chunk.key == key]
    if after_step is not None:
        condition.append(chunk.last_step > after_step)
    resume: list[ColumnElement[bool]] = []  # past the last span read
    while True:
        page = session.execute(select(chunk.first_step, chunk.seq, chunk.count).where(*condition, *resume)
                               .order_by(chunk.first_step, chunk.seq).limit(SPANS_PER_READ)).all()
        yield from page
        if len(page) < SPANS_PER_READ:
            return
        resume = [tuple_(chunk.first_step, chunk.seq) > tuple_(*page[-1][:2])]


def read_points(session: Session, run_id: int, key: str) -> Series:
    """Every point of one series, in step order."""
    return chunk_points(session.execute(
        select(chunk_table.c.step_bytes, chunk_table.c.value_bytes, chunk_table.c.wall_time_bytes)
        .where(chunk_table.c.run_id == run_id, chunk_table.c.key == key)
        .order_by(chunk_table.c.last_step)))


def read_many(
    session: Session, run_ids: Sequence[int], keys: list[str] | None, max_points: int
) -> dict[int, dict[str, SeriesData]]:
    """Every run × key in one call (the compare view); series longer than `max_points` are bucketed."""
    run_ids = list(dict.fromkeys(run_ids))
    require_runs(session, run_ids)
    condition = [summary_table.c.run_id.in_(run_ids)]
    if keys is not None:
        condition.append(summary_table.c.key.in_(keys))
    counts = session.execute(
        select(summary_table.c.run_id, summary_table.c.key, summary_table.c.count, summary_table.c.last_step)
        .where(*condition)
        .order_by(summary_table.c.run_id, summary_table.c.key)
    ).all()
    series: dict[int, dict[str, SeriesData]] = {run_id: {} for run_id in run_ids}
    exact = _read_exact(session, [(run_id, key) for run_id, key, count, _ in counts if count <= max_points])
    for run_id, key, count, last_step in counts:
        series[run_id][key] = exact.get((run_id, key)) or _read_bucketed(session, run_id, key, count, last_step, max_points)
    return series


def _read_exact(session: Session, series_ids: list[tuple[int, str]]) -> dict[tuple[int, str], SeriesData]:
    """All points of series that fit, in one query."""
    if not series_ids:
        return {}
    chunk = chunk_table.c
    rows = session.execute(
        select(chunk.run_id, chunk.key, chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
        .where(tuple_(chunk.run_id, chunk.key).in_(series_ids))
        .order_by(chunk.run_id, chunk.key, chunk.last_step)
    ).all()
    exact = {}
    for series_id, group in groupby(rows, key=itemgetter(0, 1)):
        steps, values, wall_times = chunk_points(row[2:] for row in group)
        exact[series_id] = SeriesData(steps, values, wall_times, None, None, len(steps))
    return exact


def _read_bucketed(session: Session, run_id: int, key: str, count: int, last_step: int, max_points: int) -> SeriesData:
    # The first step is the least first step of the key's chunks, read from their index; the summary holds the rest.
    first_step = session.scalar(
        select(func.min(chunk_table.c.first_step)).where(chunk_table.c.run_id == run_id, chunk_table.c.key == key)
    )
    if uses_rollups(first_step, last_step, max_points):
        return _read_from_rollups(session, run_id, key, count, first_step, last_step, max_points)
    # At most ROLLUP_WIDTH·max_points steps: unpacking them is a copy, and downsample() buckets them in C slices.
    return downsample(*read_points(session, run_id, key), max_points)


def _read_from_rollups(
    session: Session, run_id: int, key: str, count: int, first_step: int, last_step: int, max_points: int
) -> SeriesData:
    """Merge the series' rollup cells, k a bucket. At most count/1 and typically count/ROLLUP_WIDTH rows are read,
    in primary-key order, and merged here: a plain range read that no query plan can turn into a scan per bucket."""
    first_cell, per_bucket = first_step // ROLLUP_WIDTH, cells_per_bucket(first_step, last_step, max_points)
    cells = session.execute(
        select(rollup_table.c.cell, rollup_table.c.last_step, rollup_table.c.last_value, rollup_table.c.last_wall_time,
               rollup_table.c.min_value, rollup_table.c.max_value)
        .where(rollup_table.c.run_id == run_id, rollup_table.c.key == key)
        .order_by(rollup_table.c.cell)
    )
    buckets: list[list] = []  # [last_step, last_value, last_wall_time, min, max] per bucket
    current_bucket = None
    for cell, step, value, wall_time, low, high in cells:
        bucket = (cell - first_cell) // per_bucket
        if bucket != current_bucket:
            current_bucket = bucket
            buckets.append([step, value, wall_time, low, high])
            continue
        merged = buckets[-1]
        # Cells come in step order, so the newest cell holds the bucket's last point.
        merged[0], merged[1], merged[2] = step, value, wall_time
        merged[3], merged[4] = nan_min(merged[3], low), nan_wins_max(merged[4], high)
    steps, values, wall_times, minima, maxima = (list(column) for column in zip(*buckets, strict=True))
    return SeriesData(steps, values, wall_times, minima, maxima, count)


def require_runs(session: Session, run_ids: Sequence[int]) -> None:
    found = set(session.scalars(select(run_table.c.id).where(run_table.c.id.in_(run_ids))))
    missing = [run_id for run_id in run_ids if run_id not in found]
    if missing:
        raise AppError("RUN_NOT_FOUND", f"run {missing[0]} does not exist", {"run_ids": missing})
