"""Reads beyond the 100,000-point cap of a bucketed read: paged full-resolution reads and the CSV export return
every point of a longer series; POST /metrics/query takes up to 100 runs, with the response bounded."""

import csv
import io
import itertools

from tunelab.db.models.run import Run
from tunelab.db.session import session_scope

_names = itertools.count()
LONG_SERIES = 150_000
BATCH = 10_000  # MAX_POINTS_PER_BATCH


def _create_runs(count: int) -> list[int]:
    with session_scope() as session:
        runs = [Run(project_id=1, name=f"paging-{next(_names)}", objective="sft", method="lora", model="x",
                    config={}, seed=0, queue="cpu", external=True) for _ in range(count)]
        session.add_all(runs)
        session.flush()
        return [run.id for run in runs]


def _value(step: int) -> float:
    return step / 4  # exact in binary and in CSV text, so a read-back compares equal


def test_a_150000_point_series_comes_back_whole_by_pages_and_by_csv_export(client):
    [run_id] = _create_runs(1)
    for first in range(0, LONG_SERIES, BATCH):
        points = [{"key": "train/loss", "step": step, "value": _value(step), "wall_time": 1.7e9 + step}
                  for step in range(first, first + BATCH)]
        client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points}).raise_for_status()

    bucketed = client.get(f"/api/v1/runs/{run_id}/metrics", params={"max_points": 100_000}).json()["series"][0]
    steps, values, pages, after = [], [], 0, -1
    while after is not None:
        page = client.get(f"/api/v1/runs/{run_id}/metrics",
                          params={"keys": "train/loss", "after_step": after, "max_points": 100_000})
        assert page.status_code == 200, page.text
        [series] = page.json()["series"]
        assert not series["downsampled"] and series["count"] == LONG_SERIES
        steps += series["step"]
        values += series["value"]
        after, pages = series["next_after_step"], pages + 1
    exported = client.get(f"/api/v1/runs/{run_id}/metrics/export", params={"format": "csv"})

    assert bucketed["downsampled"] and len(bucketed["step"]) <= 100_000  # what a single read can give
    assert pages == 2
    assert steps == list(range(LONG_SERIES)) and values == [_value(step) for step in range(LONG_SERIES)]
    assert exported.status_code == 200
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert len(rows) == LONG_SERIES
    assert [int(row["step"]) for row in rows] == list(range(LONG_SERIES))
    assert all(float(row["value"]) == _value(int(row["step"])) for row in rows[::997])


def test_a_page_after_the_last_step_is_empty_and_a_bad_cursor_names_the_field(client):
    [run_id] = _create_runs(1)
    points = [{"key": key, "step": step, "value": 1.0} for key in ("a", "b") for step in range(10)]
    client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points}).raise_for_status()

    page = client.get(f"/api/v1/runs/{run_id}/metrics", params={"after_step": 4, "max_points": 3}).json()["series"]
    end = client.get(f"/api/v1/runs/{run_id}/metrics", params={"after_step": 9}).json()["series"]
    bad = client.get(f"/api/v1/runs/{run_id}/metrics", params={"after_step": "soon"})

    assert [(s["key"], s["step"], s["next_after_step"]) for s in page] == [("a", [5, 6, 7], 7), ("b", [5, 6, 7], 7)]
    assert [(s["step"], s["next_after_step"]) for s in end] == [([], None), ([], None)]
    assert bad.status_code == 422 and bad.json()["error"]["details"][0]["field"] == "after_step"


def test_a_query_reads_100_runs_and_refuses_more_or_an_unbounded_response(client):
    run_ids = _create_runs(101)
    for run_id in run_ids[:100:9]:
        client.post(f"/api/v1/runs/{run_id}/metrics",
                    json={"points": [{"key": "train/loss", "step": step, "value": 1.0} for step in range(30)]})

    hundred = client.post("/api/v1/metrics/query", json={"run_ids": run_ids[:100], "max_points": 10})
    too_many = client.post("/api/v1/metrics/query", json={"run_ids": run_ids})
    too_long = client.post("/api/v1/metrics/query", json={"run_ids": run_ids[:100], "max_points": 100_000})

    assert hundred.status_code == 200, hundred.text
    data = hundred.json()["data"]
    assert [run["run_id"] for run in data] == run_ids[:100]
    assert all(len(series["step"]) <= 10 for run in data for series in run["series"])
    assert sum(len(run["series"]) for run in data) == len(run_ids[:100:9])
    assert too_many.status_code == 422 and too_many.json()["error"]["details"][0]["field"] == "run_ids"
    assert too_long.status_code == 422 and too_long.json()["error"]["details"][0]["field"] == "max_points"
