"""Server-Sent Events against the real API and worker: live points, exact resume after Last-Event-ID, final status."""

import json

import httpx

from tests.worker.conftest import launch, wait_finished


def _read_events(http: httpx.Client, path: str, headers: dict | None = None, stop_after_metrics: int | None = None,
                 timeout=240):
    """Parse an SSE stream into (event, id, data) tuples; stop at `end` or after N metrics events."""
    events, fields = [], {}
    with http.stream("GET", path, headers=headers or {}, timeout=timeout) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if line == "":
                if "event" in fields:
                    events.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
                    if fields["event"] == "end":
                        break
                    metrics_seen = sum(1 for e in events if e[0] == "metrics")
                    if stop_after_metrics and metrics_seen >= stop_after_metrics:
                        break
                fields = {}
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    return events


def _points(events) -> list[tuple[str, int]]:
    return [(p["key"], p["step"]) for kind, _, data in events if kind == "metrics" for p in data]


def _all_points(api, run_id) -> set[tuple[str, int]]:
    body = api.get(f"/runs/{run_id}/metrics", params={"max_points": 10000}).json()
    return {(s["key"], step) for s in body["series"] for step in s["step"]}


def test_live_client_gets_every_point_and_final_status(api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=30, eval_steps=10)
    events = _read_events(api, f"/runs/{run['id']}/events")
    assert events[-1][0] == "end" and events[-1][2]["status"] == "succeeded"
    statuses = [data["status"] for kind, _, data in events if kind == "status"]
    assert statuses[-1] == "succeeded"
    # The worker's phase reaches a live viewer with the run (the engine's order of phases: tests/training), and an
    # ended run has none.
    phases = [data["progress"]["phase"] for kind, _, data in events if kind == "status" and data["status"] == "running"]
    assert {"training"} <= set(phases) <= {None, "loading_data", "loading_model", "evaluating", "training", "saving",
                                          "generating"}, phases
    assert [data for kind, _, data in events if kind == "status"][-1]["progress"]["phase"] is None
    received = _points(events)
    assert len(received) == len(set(received)), "no point twice"
    assert set(received) == _all_points(api, run["id"])
    assert sum(1 for e in events if e[0] == "metrics") >= 2, "points arrive in several live flushes"


def test_reconnect_with_last_event_id_gets_exactly_the_missed_points(api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=30, eval_steps=10)
    url = f"/runs/{run['id']}/events"
    first = _read_events(api, url, stop_after_metrics=1)
    last_id = [event_id for kind, event_id, _ in first if kind == "metrics"][-1]
    wait_finished(api, run["id"])
    second = _read_events(api, url, headers={"Last-Event-ID": last_id})
    before, after = _points(first), _points(second)
    assert before and after
    assert not set(before) & set(after), "no duplicates across the reconnect"
    assert set(before) | set(after) == _all_points(api, run["id"])
    assert second[-1][0] == "end"
