"""The metrics fast path decodes batches with msgspec (schemas/metrics.FastMetricBatch) and hands whatever it refuses
to the route's pydantic model. It must never take a batch the route would refuse, nor read one differently."""

import json
import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tunelab.schemas.common import MAX_BIGINT
from tunelab.schemas.metrics import MAX_POINTS_PER_BATCH, MetricBatchIn, fast_metric_batch

# Values of every JSON type, and the edges of each field's range.
ANY_JSON = st.one_of(
    st.none(), st.booleans(), st.text(max_size=5), st.sampled_from(["NaN", "Infinity", "-Infinity", "1", "1.5"]),
    st.integers(min_value=-2, max_value=3), st.sampled_from([MAX_BIGINT, MAX_BIGINT + 1, -1, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1.0, 0.0, 1e308, -1e308]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
KEYS = st.one_of(st.text(min_size=0, max_size=3), st.sampled_from(["x" * 200, "x" * 201, "é" * 200, "🙂" * 201]),
                 ANY_JSON)
POINT = st.fixed_dictionaries(
    {"key": KEYS, "step": ANY_JSON, "value": ANY_JSON},
    optional={"wall_time": ANY_JSON, "extra": ANY_JSON},
)


def _read_by_route(body: bytes) -> list[tuple] | None:
    try:
        batch = MetricBatchIn.model_validate_json(body)
    except ValidationError:
        return None
    return [(p["key"], p["step"], p["value"], p.get("wall_time")) for p in batch.points]


def _read_by_fast_path(body: bytes) -> list[tuple] | None:
    try:
        batch = fast_metric_batch.decode(body)
    except msgspec.DecodeError:
        return None
    return [(p.key, p.step, p.value, p.wall_time) for p in batch.points]


def _same(fast: list[tuple], route: list[tuple]) -> bool:
    return all(
        type(f[1]) is type(r[1]) and f[:2] == r[:2] and float(f[2]) == float(r[2]) and
        (f[3] == r[3] or (f[3] is not None and r[3] is not None and math.isclose(f[3], r[3])))
        for f, r in zip(fast, route, strict=True))


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.lists(POINT, max_size=3).map(lambda points: {"points": points}), ANY_JSON,
                 st.fixed_dictionaries({"points": ANY_JSON})))
def test_what_the_fast_path_takes_the_route_takes_and_reads_alike(document):
    body = json.dumps(document).encode()
    fast = _read_by_fast_path(body)
    if fast is not None:
        route = _read_by_route(body)
        assert route is not None, f"the fast path took a batch the route refuses: {body!r}"
        assert _same(fast, route), (fast, route)


@pytest.mark.parametrize("body", [
    b'{"points": [{"key": "loss", "step": 3, "value": 0.5}]}',
    b'{"points": [{"key": "loss", "step": 3, "value": 1, "wall_time": 1.7e9}, {"key": "lr", "step": 0, "value": -2e-5}]}',
    b'{"points": [{"key": "loss", "step": 3, "value": 0.5, "wall_time": null, "unknown": [1]}], "more": 1}',
])
def test_ordinary_batches_take_the_fast_path(body):
    assert _read_by_fast_path(body) is not None and _read_by_route(body) is not None


@pytest.mark.parametrize("body", [
    b'{"points": [{"key": "loss", "step": 3, "value": "NaN"}]}',  # non-finite values travel as strings
    b'{"points": [{"key": "loss", "step": 3.0, "value": 1}]}',
    b'{"points": [{"key": "loss", "step": "3", "value": 1}]}',
    b'{"points": [{"key": "loss", "step": 3, "value": 1e999}]}',  # read as infinity
])
def test_batches_only_pydantic_reads_go_to_the_route(body):
    assert _read_by_fast_path(body) is None and _read_by_route(body) is not None


def test_the_batch_limits_are_the_routes():
    point = {"key": "loss", "step": 0, "value": 1.0}
    for count, taken in ((0, False), (MAX_POINTS_PER_BATCH, True), (MAX_POINTS_PER_BATCH + 1, False)):
        body = json.dumps({"points": [point] * count}).encode()
        assert (_read_by_fast_path(body) is not None) is taken
        assert (_read_by_route(body) is not None) is taken
