import itertools

import pytest

from tunelab.db.models.run import Run
from tunelab.db.session import session_scope

_names = itertools.count()


def _create_run() -> int:
    with session_scope() as session:
        run = Run(project_id=1, name=f"metrics-{next(_names)}", objective="sft", method="lora", model="x",
                  config={}, seed=0, queue="cpu", external=True)
        session.add(run)
        session.flush()
        return run.id


def _points(key: str, steps: range, value=lambda step: 1.0 / (step + 1)) -> list[dict]:
    return [{"key": key, "step": step, "value": value(step), "wall_time": 1.7e9 + step} for step in steps]


@pytest.fixture
def run_id(client) -> int:
    return _create_run()


def test_points_read_back_exactly(client, run_id):
    points = _points("train/loss", range(50)) + _points("eval/loss", range(0, 50, 10))

    created = client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points})
    read = client.get(f"/api/v1/runs/{run_id}/metrics", params={"keys": "train/loss"})

    assert created.status_code == 200 and created.json() == {"seq": 1, "accepted": 55}
    assert read.status_code == 200
    [series] = read.json()["series"]
    assert series["key"] == "train/loss" and series["count"] == 50 and not series["downsampled"]
    assert series["step"] == list(range(50))
    assert series["value"] == [p["value"] for p in points[:50]]
    assert series["wall_time"] == [p["wall_time"] for p in points[:50]]


def test_a_repeated_batch_stores_nothing_twice(client, run_id):
    batch = {"points": _points("train/loss", range(100))}

    first = client.post(f"/api/v1/runs/{run_id}/metrics", json=batch).json()
    again = client.post(f"/api/v1/runs/{run_id}/metrics", json=batch).json()
    series = client.get(f"/api/v1/runs/{run_id}/metrics").json()["series"]

    assert again["seq"] == first["seq"] + 1
    assert len(series) == 1 and series[0]["count"] == 100 and series[0]["step"] == list(range(100))


def test_a_long_series_is_bucketed_keeping_the_spike_and_last_point(client, run_id):
    spike_step = 2345
    points = _points("train/loss", range(5000), lambda step: 99.5 if step == spike_step else 1.0 / (step + 1))
    client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points})

    series = client.get(f"/api/v1/runs/{run_id}/metrics", params={"max_points": 100}).json()["series"][0]

    assert series["downsampled"] and len(series["step"]) <= 100
    assert max(series["max"]) == 99.5
    assert (series["step"][-1], series["value"][-1]) == (4999, points[-1]["value"])


def test_missing_wall_time_is_the_time_of_receipt(client, run_id):
    client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": [{"key": "lr", "step": 0, "value": 0.1}]})

    series = client.get(f"/api/v1/runs/{run_id}/metrics").json()["series"][0]

    assert series["wall_time"][0] > 1.7e9


def test_non_finite_values_come_back_as_null(client, run_id):
    client.post(f"/api/v1/runs/{run_id}/metrics",
                json={"points": [{"key": "grad_norm", "step": 0, "value": "Infinity"},
                                 {"key": "grad_norm", "step": 1, "value": 2.0}]})

    series = client.get(f"/api/v1/runs/{run_id}/metrics").json()["series"][0]

    assert series["value"] == [None, 2.0]


def test_compare_query_returns_every_run_and_key(client):
    run_ids = [_create_run(), _create_run()]
    for offset, run_id in enumerate(run_ids):
        points = _points("train/loss", range(3000), lambda step, o=offset: o + 1.0 / (step + 1))
        client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points + _points("eval/loss", range(3))})

    response = client.post("/api/v1/metrics/query",
                           json={"run_ids": run_ids, "keys": ["train/loss", "eval/loss"], "max_points": 500})

    assert response.status_code == 200
    data = response.json()["data"]
    assert [run["run_id"] for run in data] == run_ids
    for offset, run in enumerate(data):
        by_key = {series["key"]: series for series in run["series"]}
        assert set(by_key) == {"train/loss", "eval/loss"}
        assert by_key["train/loss"]["downsampled"] and len(by_key["train/loss"]["step"]) <= 500
        assert by_key["train/loss"]["max"][0] == offset + 1.0
        assert by_key["eval/loss"]["step"] == [0, 1, 2]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/v1/runs/999999/metrics", None),
        ("post", "/api/v1/runs/999999/metrics", {"points": [{"key": "a", "step": 0, "value": 1.0}]}),
        ("post", "/api/v1/metrics/query", {"run_ids": [999999]}),
    ],
)
def test_an_unknown_run_is_404_in_the_error_shape(client, method, path, body):
    response = client.request(method, path, json=body)

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "RUN_NOT_FOUND"
    assert error["details"] == {"run_ids": [999999]} or error["details"] == {"run_id": 999999}


def test_a_bad_point_is_422_naming_the_field(client, run_id):
    points = _points("train/loss", range(3)) + [{"key": "train/loss", "step": "three", "value": 1.0}]

    response = client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points})

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert [detail["field"] for detail in error["details"]] == ["points.3.step"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"points": []}, "points"), ({"points": [{"key": "", "step": 0, "value": 1}]}, "points.0.key")],
)
def test_empty_batches_and_keys_are_refused(client, run_id, body, field):
    response = client.post(f"/api/v1/runs/{run_id}/metrics", json=body)

    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == field


def test_max_points_is_capped(client, run_id):
    response = client.get(f"/api/v1/runs/{run_id}/metrics", params={"max_points": 10**6})

    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "max_points"
