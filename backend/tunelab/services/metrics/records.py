"""What the metric history is made of: the point as ingest takes it, the tables it is stored in, and the shapes
reads and replay return."""

from typing import NamedTuple

from tunelab.db.base import table_of
from tunelab.db.models.metric import MetricChunk, MetricRollup, MetricSummary
from tunelab.db.models.run import Run

EVAL_LOSS_KEY = "eval/loss"


chunk_table = table_of(MetricChunk)
summary_table = table_of(MetricSummary)
rollup_table = table_of(MetricRollup)
run_table = table_of(Run)


# (key, step, value, wall_time): plain tuples on the hot path, where a million points a minute pass through.
MetricPoint = tuple[str, int, float, float]


class SequencedPoint(NamedTuple):
    seq: int
    key: str
    step: int
    value: float
    wall_time: float


class KeySummary(NamedTuple):
    last_step: int
    last_value: float
    min_value: float
    max_value: float
    count: int  # type: ignore[assignment]  # the column's name; a field may shadow tuple.count


Series = tuple[list[int], list[float], list[float]]  # steps (ascending), values, wall times
