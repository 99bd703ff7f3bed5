"""A batch in Python, before it is stored: its points by key in step order less what is already stored (what keeps
ingest idempotent), its rollup cells, and its per-key summaries."""

import math
from bisect import bisect_left
from collections import defaultdict
from operator import itemgetter
from typing import NamedTuple

from tunelab.services.metrics.downsample import ROLLUP_WIDTH
from tunelab.services.metrics.driver import Driver
from tunelab.services.metrics.packing import pack, unpack
from tunelab.services.metrics.records import KeySummary, MetricPoint


class NewChunk(NamedTuple):
    """A flush's new points of one key, in columns, in step order (a row of metric_chunk once packed)."""

    key: str
    steps: list[int]
    values: list[float]
    wall_times: list[float]

    def row(self) -> tuple:
        """The metric_chunk columns after run_id and seq."""
        return (self.key, self.steps[0], self.steps[-1], len(self.steps), pack("q", self.steps),
                pack("d", self.values), pack("d", self.wall_times))


def new_chunks(driver: Driver | None, run_id: int, points: list[MetricPoint],
                stored_last_steps: dict[str, int]) -> list[NewChunk]:
    """The batch per key, each in step order, less every (key, step) already stored or repeated in the batch (the
    first one sent wins): what makes ingest idempotent now that no primary key holds a point. The stored last step
    of each key (its summary, read by the seq bump) tells whether a key's batch can overlap what is stored: nearly
    never (steps grow), and only then are the stored chunks of its step range read. Without a driver nothing is
    read: store_at_once's statement checks the overlap itself."""
    if not points:
        return []
    by_key: defaultdict[str, list[MetricPoint]] = defaultdict(list)
    for point in points:
        by_key[point[0]].append(point)
    chunks = []
    for key, members in by_key.items():
        steps = list(map(_step_of, members))
        if not all(map(int.__lt__, steps, steps[1:])):  # not strictly ascending: sort, keeping each step's first
            first_of_step: dict[int, MetricPoint] = {}
            for point in members:
                first_of_step.setdefault(point[1], point)
            members = sorted(first_of_step.values(), key=_step_of)
            steps = list(map(_step_of, members))
        stored_last_step = stored_last_steps.get(key)
        if driver is not None and stored_last_step is not None and steps[0] <= stored_last_step:
            stored = _stored_steps(driver, run_id, key, steps[0], steps[-1])
            members = [point for point in members if point[1] not in stored]
            steps = list(map(_step_of, members))
        if members:
            chunks.append(NewChunk(key, steps, list(map(_value_of, members)), list(map(_wall_time_of, members))))
    return chunks


def _stored_steps(driver: Driver, run_id: int, key: str, first_step: int, last_step: int) -> set[int]:
    cursor = driver.execute("chunk_steps_between", {"the_run_id": run_id, "the_key": key,
                                                    "the_first_step": first_step, "the_last_step": last_step})
    stored: set[int] = set()
    for (step_bytes,) in cursor.fetchall():
        stored.update(unpack("q", step_bytes))
    cursor.close()
    return stored


class Cell(NamedTuple):
    """New points of one key in one ROLLUP_WIDTH-step cell."""

    last_step: int
    last_value: float
    last_wall_time: float
    min_value: float  # NaN skipped
    max_value: float  # NaN wins: a cell holding a NaN shows it, as PostgreSQL orders floats
    max_number: float  # NaN skipped, for the summaries
    count: int  # type: ignore[assignment]  # a field may shadow tuple.count


def cells_of(chunks: list[NewChunk]) -> dict[tuple[str, int], Cell]:
    """The new points by (key, cell). A chunk is in step order, so each cell is a slice found by bisection and its
    min and max are C builtins over the slice: no Python work per point."""
    cells = {}
    for key, steps, values, wall_times in chunks:
        has_nan = math.isnan(sum(values))  # also true for +inf plus -inf: then just slower
        start, end_of_chunk = 0, len(steps)
        while start < end_of_chunk:
            cell_id = steps[start] // ROLLUP_WIDTH
            end = bisect_left(steps, (cell_id + 1) * ROLLUP_WIDTH, start)
            last, cell_values = end - 1, values[start:end]
            if has_nan and any(map(math.isnan, cell_values)):
                numbers = [value for value in cell_values if not math.isnan(value)]
                low, high = (min(numbers), max(numbers)) if numbers else (math.nan, math.nan)
                cells[key, cell_id] = Cell(steps[last], values[last], wall_times[last], low, math.nan, high, end - start)
            else:
                low, high = min(cell_values), max(cell_values)
                cells[key, cell_id] = Cell(steps[last], values[last], wall_times[last], low, high, high, end - start)
            start = end
    return cells


_step_of = itemgetter(1)  # of a MetricPoint, in C


_value_of = itemgetter(2)


_wall_time_of = itemgetter(3)


def summarize(cells: dict[tuple[str, int], Cell]) -> dict[str, KeySummary]:
    """Per-key summary of new points; min/max skip NaN (a NaN loss must not hide the best loss reached)."""
    summaries: dict[str, KeySummary] = {}
    for (key, _), cell in cells.items():
        new = KeySummary(cell.last_step, cell.last_value, cell.min_value, cell.max_number, cell.count)
        summaries[key] = _merge(summaries[key], new) if key in summaries else new
    return summaries


def _merge(old: KeySummary, new: KeySummary) -> KeySummary:
    last_step, last_value = new[:2] if new.last_step >= old.last_step else old[:2]
    return KeySummary(
        last_step,
        last_value,
        nan_min(old.min_value, new.min_value),
        _nan_max(old.max_value, new.max_value),
        old.count + new.count,
    )


def nan_min(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _nan_max(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def nan_wins_max(a: float, b: float) -> float:
    """max with NaN above every number, as PostgreSQL orders floats (a bucket holding a NaN shows it)."""
    return a if math.isnan(a) else b if math.isnan(b) else max(a, b)


def summary_rows(summaries: dict[str, KeySummary]) -> list[tuple]:
    """The metric_summary columns after run_id."""
    return [(key, *summary) for key, summary in summaries.items()]


def rollup_rows(cells: dict[tuple[str, int], Cell]) -> list[tuple]:
    """The metric_rollup columns after run_id."""
    return [(key, cell_id, cell.last_step, cell.last_value, cell.last_wall_time, cell.min_value, cell.max_value,
             cell.count) for (key, cell_id), cell in cells.items()]
