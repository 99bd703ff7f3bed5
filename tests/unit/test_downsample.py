import math

import pytest

from tunelab.services.metrics.downsample import bucket_of, downsample


def _series(length: int, spike_at: int | None = None, spike: float = 50.0):
    steps = list(range(length))
    values = [1.0 / (1 + step) for step in steps]
    if spike_at is not None:
        values[spike_at] = spike
    wall_times = [1.7e9 + 0.25 * step for step in steps]
    return steps, values, wall_times


def test_a_spike_and_the_last_point_survive_bucketing():
    steps, values, wall_times = _series(100_000, spike_at=43_210, spike=123.456)

    series = downsample(steps, values, wall_times, 1000)

    assert series.downsampled and series.count == 100_000
    assert len(series.step) <= 1000
    assert max(series.max) == 123.456
    assert (series.step[-1], series.value[-1], series.wall_time[-1]) == (99_999, values[-1], wall_times[-1])


@pytest.mark.parametrize(
    ("max_points", "buckets"),
    [(1000, 1000), (100, 79)],  # 10,007 steps: equal ranges, then (span > 64·N) 2 rollup cells of 64 steps a bucket
)
def test_each_bucket_keeps_its_exact_min_max_and_last_point(max_points, buckets):
    steps, values, wall_times = _series(10_007)
    values = [math.sin(step / 7.0) for step in steps]

    series = downsample(steps, values, wall_times, max_points)

    by_bucket: dict[int, list[int]] = {}
    for step in steps:
        by_bucket.setdefault(bucket_of(step, steps[0], steps[-1], max_points), []).append(step)
    assert len(series.step) == len(by_bucket) == buckets
    for i, members in enumerate(by_bucket.values()):
        assert series.step[i] == members[-1]
        assert series.value[i] == values[members[-1]]
        assert series.min[i] == min(values[s] for s in members)
        assert series.max[i] == max(values[s] for s in members)


def test_a_series_that_fits_is_returned_exactly():
    steps, values, wall_times = _series(1000)

    series = downsample(steps, values, wall_times, 1000)

    assert not series.downsampled
    assert (series.step, series.value, series.wall_time) == (steps, values, wall_times)
    assert series.min is None and series.max is None


def test_sparse_steps_leave_empty_buckets_out():
    steps = [0, 1, 2, 1_000_000]
    series = downsample(steps, [4.0, 3.0, 2.0, 1.0], [0.0, 1.0, 2.0, 3.0], 2)

    assert series.step == [2, 1_000_000]
    assert (series.min, series.max, series.value) == ([2.0, 1.0], [4.0, 1.0], [2.0, 1.0])


def test_nan_is_the_bucket_max_and_never_its_min():
    steps = list(range(6))
    values = [1.0, math.nan, 3.0, math.nan, math.nan, math.nan]

    series = downsample(steps, values, [0.0] * 6, 2)

    assert series.min[0] == 1.0 and math.isnan(series.max[0])
    assert math.isnan(series.min[1]) and math.isnan(series.max[1])


def test_max_points_must_be_positive():
    with pytest.raises(ValueError):
        downsample([1], [1.0], [1.0], 0)
