import re

import psutil
import pytest

from tests.conftest import find_bundled_dataset, wait_for, wait_while_progressing

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


# The line a training process writes first into its run's train.log, warm or started for the run.
_CLAIMED_BY = re.compile(r"run (\d+) claimed by .*\(attempt (\d+), training process (\d+)")


def training_pid(api, run_id: int, attempt: int = 1) -> int:
    """The pid of the run attempt's training process, as its train.log names it (a warm process's command line does
    not name its run)."""
    def find():
        text = api.get(f"/runs/{run_id}/logs", params={"offset": 0, "tail_bytes": 1024 * 1024}).json()["text"]
        for found_run, found_attempt, pid in _CLAIMED_BY.findall(text):
            if (int(found_run), int(found_attempt)) == (run_id, attempt):
                return int(pid)
        return None

    return wait_for(find, 60, 0.1, f"the training process of run {run_id}")


def training_process(api, run_id: int, attempt: int = 1) -> psutil.Process:
    return psutil.Process(training_pid(api, run_id, attempt))
