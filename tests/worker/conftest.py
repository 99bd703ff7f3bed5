import pytest

from tests.conftest import find_bundled_dataset, wait_while_progressing

TINY_MODEL = "tunelab-tiny"
FINISHED = {"succeeded", "failed", "canceled"}


@pytest.fixture
def sample_dataset(api) -> dict:
    return bundled_dataset(api, "tiny-tasks")


def bundled_dataset(api, name: str) -> dict:
    return find_bundled_dataset(lambda params: api.get("/datasets", params=params).json(), name)


def launch(api, method: str, dataset_id: int, objective: str = "sft", **params) -> dict:
    body = {"objective": objective, "method": method, "model": TINY_MODEL, "dataset": dataset_id, "params": params}
    response = api.post("/runs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def run_progress(run: dict) -> tuple:
    """What changes while a run gets anywhere: its status, step and metrics flushes."""
    return run["status"], run["progress"]["current_step"], run["metric_seq"], run["attempt"]


def wait_finished(api, run_id: int, stall_s: float = 180) -> dict:
    """The run once finished; fails only when it stops making progress for `stall_s` (not on a slow machine)."""
    return wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(), lambda run: run["status"] in FINISHED,
                                  run_progress, stall_s, message=f"run {run_id} to finish")


def series(api, run_id: int, key: str, max_points: int = 1000) -> dict:
    """One metric series of a run, as the API returns it."""
    body = api.get(f"/runs/{run_id}/metrics", params={"keys": key, "max_points": max_points}).json()
    found = [s for s in body["series"] if s["key"] == key]
    assert found, f"run {run_id} has no {key} series: {body}"
    return found[0]
