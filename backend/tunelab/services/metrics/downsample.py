"""Reduce a metric series to at most N points without hiding what matters on a chart.

A series longer than N is cut into at most N step ranges; each non-empty range (bucket) becomes one point that keeps
the bucket's last point exactly (step, value, wall_time) plus the bucket's min and max value, so a loss spike is
never averaged away and the series' last point is always exact. NaN sorts above every number, as in PostgreSQL:
a bucket holding a NaN has a NaN max (null in JSON), its min is the smallest number.

Two regimes, so that reading a long series never scans all of it:
- a step span of at most ROLLUP_WIDTH·N is cut into N equal ranges (the raw points are read);
- a longer span is cut on the grid of ROLLUP_WIDTH-step cells, k cells a bucket with k = ceil(cells / N), which
  gives between N/2 and N buckets computed from the per-cell rollups kept at ingest (1/ROLLUP_WIDTH of the rows).
"""

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

# Steps per rollup cell (metric_rollup rows; migration 0011 rebuilds them when this changes). Every flush upserts a
# row per cell it touches, and points are read from their chunks at little cost, so cells are wide: 64 steps.
ROLLUP_WIDTH = 64


@dataclass(frozen=True, slots=True)
class SeriesData:
    """One series in columns. `min`/`max` are None when the series is exact (every stored point is returned)."""

    step: list[int]
    value: list[float]
    wall_time: list[float]
    min: list[float] | None
    max: list[float] | None
    count: int
    # A page of a full-resolution read (services.metrics.read_page): the step to continue after; None at the end.
    next_after_step: int | None = None

    @property
    def downsampled(self) -> bool:
        return self.min is not None


def bucket_of(step: int, first_step: int, last_step: int, max_points: int) -> int:
    """The bucket a step falls in, in either regime; integer arithmetic so SQL and Python agree exactly."""
    if uses_rollups(first_step, last_step, max_points):
        per_bucket = cells_per_bucket(first_step, last_step, max_points)
        return (step // ROLLUP_WIDTH - first_step // ROLLUP_WIDTH) // per_bucket
    return (step - first_step) * max_points // (last_step - first_step + 1)


def uses_rollups(first_step: int, last_step: int, max_points: int) -> bool:
    """Whether a series spanning these steps is bucketed on the rollup grid (see the module docstring)."""
    return last_step - first_step + 1 > ROLLUP_WIDTH * max_points


def cells_per_bucket(first_step: int, last_step: int, max_points: int) -> int:
    cells = last_step // ROLLUP_WIDTH - first_step // ROLLUP_WIDTH + 1
    return -(-cells // max_points)


def downsample(
    steps: Sequence[int], values: Sequence[float], wall_times: Sequence[float], max_points: int
) -> SeriesData:
    """Bucket a series sorted by step into at most `max_points` points; exact when it already fits."""
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    count = len(steps)
    if count <= max_points:
        return SeriesData(list(steps), list(values), list(wall_times), None, None, count)

    first_step = steps[0]
    span = steps[-1] - first_step + 1
    if uses_rollups(first_step, steps[-1], max_points):
        first_cell, per_bucket = first_step // ROLLUP_WIDTH, cells_per_bucket(first_step, steps[-1], max_points)

        def bucket_start(bucket: int) -> int:
            return (first_cell + bucket * per_bucket) * ROLLUP_WIDTH
    else:

        def bucket_start(bucket: int) -> int:
            # The smallest s with bucket_of(s) >= bucket.
            return first_step - (-bucket * span // max_points)

    has_nan = any(map(math.isnan, values))
    out_step: list[int] = []
    out_value: list[float] = []
    out_wall: list[float] = []
    out_min: list[float] = []
    out_max: list[float] = []
    start = 0
    for bucket in range(1, max_points + 1):
        # Found by bisection so each bucket's min/max run in C over a slice instead of a Python loop over points.
        end = bisect_left(steps, bucket_start(bucket), start)
        if end == start:
            continue
        chunk = values[start:end]
        out_step.append(steps[end - 1])
        out_value.append(values[end - 1])
        out_wall.append(wall_times[end - 1])
        if has_nan:
            numbers = [v for v in chunk if not math.isnan(v)]
            out_min.append(min(numbers) if numbers else math.nan)
            out_max.append(math.nan if len(numbers) < len(chunk) else max(numbers))
        else:
            out_min.append(min(chunk))
            out_max.append(max(chunk))
        start = end
    return SeriesData(out_step, out_value, out_wall, out_min, out_max, count)
