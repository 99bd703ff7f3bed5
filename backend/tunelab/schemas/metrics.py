"""Metric requests and responses. Series travel in columns (one list per field), the compact shape charts consume."""

import sys
from typing import Annotated, NotRequired

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from typing_extensions import TypedDict

from tunelab.schemas.common import MAX_BIGINT, ResourceId

MAX_POINTS_PER_BATCH = 10_000
MAX_RUNS_PER_QUERY = 100
# Most points one POST /metrics/query may ask for (runs × max_points): 20 runs at full history, 100 runs at 20,000.
MAX_POINTS_PER_QUERY = 2_000_000
DEFAULT_MAX_POINTS = 1000
# A full-history read of a long run (10^5 points) is allowed; beyond that a chart gains nothing.
MAX_POINTS_LIMIT = 100_000

MetricKey = Annotated[str, Field(min_length=1, max_length=200, description="Metric name, e.g. train/loss")]
MaxPoints = Annotated[
    int, Field(ge=1, le=MAX_POINTS_LIMIT, description="Most points returned per series; longer series are bucketed")
]


class MetricPointIn(TypedDict):
    # A TypedDict, not a model: validated points stay plain dicts, which the ingest hot path reads fastest.
    # Non-finite values are real in training (a diverging loss); JSON has no literal for them, so clients send
    # the strings "NaN", "Infinity" or "-Infinity", which Pydantic accepts for floats.
    key: MetricKey
    step: Annotated[int, Field(ge=0, le=MAX_BIGINT, description="Training step (x axis)")]
    value: float
    wall_time: NotRequired[Annotated[float | None, Field(allow_inf_nan=False, description="Unix time in seconds; time of receipt if omitted")]]


class MetricBatchIn(BaseModel):
    points: list[MetricPointIn] = Field(min_length=1, max_length=MAX_POINTS_PER_BATCH)


class FastMetricPoint(msgspec.Struct, gc=False):
    """MetricPointIn for the metrics fast path, decoded by msgspec in strict mode. It accepts a subset of what
    MetricBatchIn accepts (JSON numbers only: no "NaN" strings, no floats as steps, no infinities), and the fast path
    hands anything it refuses to the route, whose pydantic model decides and words the 422
    (tests/unit/test_fast_metric_batch.py holds the two to that). Untracked by the garbage collector (gc=False:
    it holds no containers), so the thousands of a batch do not trigger collections."""

    key: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    step: Annotated[int, msgspec.Meta(ge=0, le=MAX_BIGINT)]
    value: Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
    wall_time: Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)] | None = None


class FastMetricBatch(msgspec.Struct):
    points: Annotated[list[FastMetricPoint], msgspec.Meta(min_length=1, max_length=MAX_POINTS_PER_BATCH)]


fast_metric_batch = msgspec.json.Decoder(FastMetricBatch)


class _PointsUnread(msgspec.Struct):
    points: list[msgspec.Raw] = []


_points_unread = msgspec.json.Decoder(_PointsUnread)


def count_points(body: bytes) -> int | None:
    """How many points a batch's body holds, from a decode that keeps each point as its raw bytes (~25 times cheaper
    than validating them); None for a body that is not a batch, which MetricBatchIn refuses."""
    try:
        return len(_points_unread.decode(body).points)
    except (msgspec.DecodeError, RecursionError):
        return None


class MetricBatchPublic(BaseModel):
    seq: int = Field(description="Number of the flush that stored this batch; live events carry it as their id")
    accepted: int = Field(description="Points in the batch; points already stored under the same step are kept as they were")


class MetricSeriesPublic(BaseModel):
    """One series in columns. When `downsampled`, each point is the last of a step range and `min`/`max` give
    the range's extremes; otherwise every stored point is here and `min`/`max` are null. Non-finite values are null."""

    # Serialising NaN/inf as null keeps the JSON valid for every client.
    model_config = ConfigDict(ser_json_inf_nan="null")

    key: str
    count: int = Field(description="Points stored for this series")
    downsampled: bool
    step: list[int]
    value: list[float]
    wall_time: list[float]
    min: list[float] | None
    max: list[float] | None
    next_after_step: int | None = Field(
        None, description="Paged reads (after_step given): pass this as after_step for the next page; null at the end")



class RunMetricsPublic(BaseModel):
    run_id: int
    series: list[MetricSeriesPublic]


class MetricsQuery(BaseModel):
    run_ids: list[ResourceId] = Field(min_length=1, max_length=MAX_RUNS_PER_QUERY)
    keys: list[MetricKey] | None = Field(None, description="Keys to read; every key of each run when null")
    max_points: MaxPoints = DEFAULT_MAX_POINTS

    @field_validator("max_points")
    @classmethod
    def _bounded_response(cls, max_points: int, info: ValidationInfo) -> int:
        runs = len(info.data.get("run_ids") or ())
        if runs * max_points > MAX_POINTS_PER_QUERY:
            raise ValueError(f"at most {MAX_POINTS_PER_QUERY // runs:,} points per series for {runs} runs "
                             f"({MAX_POINTS_PER_QUERY:,} in all); read longer series run by run")
        return max_points


class MetricsQueryPublic(BaseModel):
    data: list[RunMetricsPublic]
