"""The ingest and read path at the service level, on SQLite and on PostgreSQL."""

import math

import pytest
from sqlalchemy.orm import Session

from tunelab.db.models.metric import MetricSummary
from tunelab.db.models.run import Run
from tunelab.services import metrics
from tunelab.services.metrics import reads
from tunelab.services.metrics.downsample import downsample


def _create_run(session: Session) -> Run:
    run = Run(project_id=1, name="backend", objective="sft", method="lora", model="x", config={}, seed=0,
              queue="cpu", external=True)
    session.add(run)
    session.flush()
    return run


def test_ingest_then_read_back_exactly(session):
    run = _create_run(session)
    points = [("train/loss", step, 1.0 / (step + 1), 1.7e9 + step) for step in range(300)]

    seq = metrics.ingest_points(session, run.id, points)
    series = metrics.read_series(session, run.id, None, 1000)

    assert seq == 1
    assert list(series) == ["train/loss"]
    assert series["train/loss"].step == list(range(300))
    assert series["train/loss"].value == [value for _, _, value, _ in points]
    assert metrics.list_keys(session, run.id) == ["train/loss"]


def test_a_retried_flush_changes_nothing_but_the_sequence(session):
    run = _create_run(session)
    points = [("train/loss", step, float(step), 0.0) for step in range(10)]

    first = metrics.ingest_points(session, run.id, points)
    second = metrics.ingest_points(session, run.id, points + [("train/loss", 10, -1.0, 0.0)])

    summary = session.get(MetricSummary, (run.id, "train/loss"))
    session.refresh(summary)
    assert second == first + 1
    assert (summary.count, summary.last_step, summary.last_value, summary.min_value, summary.max_value) == (
        11, 10, -1.0, -1.0, 9.0)
    assert [point.step for point in metrics.points_after(session, run.id, first, 100)] == [10]


def test_eval_loss_keeps_the_run_current(session):
    run = _create_run(session)

    metrics.ingest_points(session, run.id, [("eval/loss", 100, 2.0, 0.0), ("eval/loss", 200, 1.5, 0.0)])
    metrics.ingest_points(session, run.id, [("eval/loss", 300, 1.8, 0.0)])

    session.refresh(run)
    assert (run.final_eval_loss, run.best_eval_loss) == (1.8, 1.5)


def test_points_after_replays_in_flush_order(session):
    run = _create_run(session)
    metrics.ingest_points(session, run.id, [("b", 1, 1.0, 0.0), ("a", 1, 1.0, 0.0)])
    metrics.ingest_points(session, run.id, [("a", 2, 2.0, 0.0)])

    replay = metrics.points_after(session, run.id, 0, 10)

    assert [(p.seq, p.key, p.step) for p in replay] == [(1, "a", 1), (1, "b", 1), (2, "a", 2)]
    assert [p.step for p in metrics.points_after(session, run.id, 0, 1)] == [1]


def test_replay_finds_each_flush_through_the_replay_index_however_its_steps_interleave(session):
    """A flush's points are its chunks (metric_chunk); other flushes' points inside their step range, and a retried
    flush that stored nothing new, are told apart by seq."""
    run = _create_run(session)
    metrics.ingest_points(session, run.id, [("a", 0, 0.0, 0.0), ("a", 40, 4.0, 0.0), ("b", 7, 7.0, 0.0)])
    metrics.ingest_points(session, run.id, [("a", 20, 2.0, 0.0), ("a", 40, 9.0, 0.0)])  # 40 is stored already
    metrics.ingest_points(session, run.id, [("a", 0, 5.0, 0.0)])  # a retry: nothing new
    for first in range(3, 9):
        metrics.ingest_points(session, run.id, [("a", 100 * first + step, 1.0, 0.0) for step in range(3)])

    replay = [(p.seq, p.key, p.step, p.value) for p in metrics.points_after(session, run.id, 0, 100)]

    assert replay[:4] == [(1, "a", 0, 0.0), (1, "a", 40, 4.0), (1, "b", 7, 7.0), (2, "a", 20, 2.0)]
    assert [(seq, step) for seq, _, step, _ in replay[4:]] == [
        (seq, 100 * (seq - 1) + step) for seq in range(4, 10) for step in range(3)]
    assert [(p.seq, p.step) for p in metrics.points_after(session, run.id, 1, 100)][:1] == [(2, 20)]
    # A read cut at its limit returns the first rows in order, the last flush cut where the limit falls.
    for limit in (1, 4, 5, 9):
        assert [(p.seq, p.key, p.step, p.value) for p in metrics.points_after(session, run.id, 0, limit)] == \
            replay[:limit]


def test_a_batch_overlapping_stored_steps_stores_only_its_new_steps_and_the_first_of_a_repeated_step(session):
    """No primary key holds a point any more: ingest itself keeps each (key, step) stored once."""
    run = _create_run(session)
    metrics.ingest_points(session, run.id, [("loss", step, 1.0, 0.0) for step in range(10)])
    overlapping = [("loss", step, 2.0, 0.0) for step in range(5, 15)] + [("loss", 12, 9.0, 0.0), ("loss", 3, 9.0, 0.0)]

    seq = metrics.ingest_points(session, run.id, overlapping)

    series = metrics.read_series(session, run.id, ["loss"], 1000)["loss"]
    assert series.step == list(range(15))
    assert series.value == [1.0] * 10 + [2.0] * 5
    assert [p.step for p in metrics.points_after(session, run.id, seq - 1, 100)] == [10, 11, 12, 13, 14]
    summary = session.get(MetricSummary, (run.id, "loss"))
    session.refresh(summary)
    assert (summary.count, summary.last_step, summary.max_value) == (15, 14, 2.0)


def test_steps_logged_out_of_order_read_back_in_step_order_whole_by_pages_and_by_export(session):
    run = _create_run(session)
    flushes = ([10, 11, 12], [2, 0, 1], [5, 20], [13, 3])  # the chunks' step ranges interleave
    for steps in flushes:
        metrics.ingest_points(session, run.id, [(key, step, float(step), 0.0) for step in steps for key in "ab"])
    ordered = sorted(step for steps in flushes for step in steps)

    assert metrics.read_series(session, run.id, ["a"], 1000)["a"].step == ordered
    paged, after = [], -1
    while after is not None:
        page = metrics.read_page(session, run.id, ["b"], after, 3)["b"]
        paged.append(page.step)
        after = page.next_after_step
    assert paged == [ordered[i:i + 3] for i in range(0, len(ordered), 3)]
    assert metrics.points_page(session, run.id, ("a", 11), 5) == [
        ("a", 12, 12.0, 0.0), ("a", 13, 13.0, 0.0), ("a", 20, 20.0, 0.0), ("b", 0, 0.0, 0.0), ("b", 1, 1.0, 0.0)]
    assert metrics.points_after_step(session, run.id, "a", 4, 1) == ([5], [5.0], [0.0])


def test_a_series_of_many_small_flushes_reads_whole_and_by_pages_past_one_read_of_chunk_spans(session):
    """More one-point flushes than reads.SPANS_PER_READ, logged out of order: pages still come in step order."""
    run = _create_run(session)
    steps = [(step * 37) % 701 for step in range(701)]  # every step of 0..700 once, far out of order
    assert len(steps) > reads.SPANS_PER_READ * 2
    for step in steps:
        metrics.ingest_points(session, run.id, [("loss", step, float(step), 0.0)])

    assert metrics.points_after_step(session, run.id, "loss", None, 1000)[0] == list(range(701))
    assert metrics.points_after_step(session, run.id, "loss", 650, 3)[0] == [651, 652, 653]
    paged, after = [], -1
    while after is not None:
        page = metrics.read_page(session, run.id, ["loss"], after, 300)["loss"]
        paged += page.step
        after = page.next_after_step
    assert paged == list(range(701))


@pytest.mark.parametrize("max_points", [300, 3000])  # 30,000 steps: from the rollup cells, then from the points
def test_bucketing_matches_the_reference(session, max_points):
    run = _create_run(session)
    steps = list(range(0, 30_000, 3))
    values = [math.sin(step / 50.0) + (40.0 if step == 12_345 else 0.0) for step in steps]
    wall_times = [1.7e9 + step for step in steps]
    points = [("loss", s, v, w) for s, v, w in zip(steps, values, wall_times, strict=True)]
    # In several flushes, out of order, one repeated: the rollups must merge exactly what the chunks hold.
    for batch in (points[5000:], points[:2500], points[2000:5000]):
        metrics.ingest_points(session, run.id, batch)

    [(run_id, by_key)] = metrics.read_many(session, [run.id], ["loss"], max_points).items()

    assert by_key["loss"] == downsample(steps, values, wall_times, max_points)
    assert max(by_key["loss"].max) == values[steps.index(12_345)]


def test_infinity_is_stored_and_nan_where_the_database_can(session):
    run = _create_run(session)

    metrics.ingest_points(session, run.id, [("loss", 0, 1.0, 0.0), ("loss", 1, math.inf, 0.0), ("loss", 2, math.nan, 0.0)])

    values = metrics.read_series(session, run.id, ["loss"], 10)["loss"].value
    assert values[:2] == [1.0, math.inf]
    if session.get_bind().dialect.name == "postgresql":
        assert math.isnan(values[2])
    else:
        assert len(values) == 2


def test_unknown_runs_are_refused(session):
    from tunelab.core.errors import AppError

    with pytest.raises(AppError) as error:
        metrics.ingest_points(session, 10**9, [("loss", 0, 1.0, 0.0)])
    assert error.value.code == "RUN_NOT_FOUND"


def test_awkward_keys_and_extreme_values_are_stored_exactly(session):
    # PostgreSQL receives the batch as array literals built by the service: quoting and float text must round-trip.
    run = _create_run(session)
    keys = ['quote"d', "back\\slash", "comma,{brace}", " spaced ", "ünï/cödé", "NULL"]
    values = [0.1, 5e-324, 1.7976931348623157e308, -0.0, math.inf, -math.inf, 1 / 3]
    points = [(key, step, value, 1.7e9 + step / 7) for key in keys for step, value in enumerate(values)]

    metrics.ingest_points(session, run.id, points)
    series = metrics.read_series(session, run.id, None, 1000)

    assert sorted(series) == sorted(keys)
    for key in keys:
        assert series[key].value == values
        assert series[key].wall_time == [1.7e9 + step / 7 for step in range(len(values))]
