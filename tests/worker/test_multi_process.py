"""Multi-process runs through the real worker: torchrun starts the ranks (DDP over gloo on this CPU), rank 0 alone
records the run, a force stop kills every rank, and a run asking for more processes than the queue's workers have
devices for is refused at launch."""

import os

import psutil

from tests.conftest import wait_for
from tests.worker.conftest import launch, series, wait_finished
from tunelab.training.checkpoints import CHECKPOINTS_DIR, latest_checkpoint

QUEUE = os.environ["TUNELAB_DEFAULT_QUEUE"]  # the session worker's queue (tests/conftest.py)
QUICK = {"max_steps": 4, "eval_steps": 4, "checkpoint_every_steps": 2, "max_length": 64, "num_processes": 2}


def training_processes(run_id: int) -> list[psutil.Process]:
    """torchrun and its ranks: every process running `tunelab train RUN_ID`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "tunelab.cli" in cmdline and "train" in cmdline and str(run_id) in cmdline:
            found.append(process)
    return found


def test_a_two_process_run_trains_and_rank_zero_alone_reports_it(api, worker, sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], **QUICK)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]

    folder = settings.artifact_dir / str(run["id"])
    checkpoint = latest_checkpoint(folder / CHECKPOINTS_DIR)
    assert checkpoint is not None
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= {p.name for p in checkpoint.iterdir()}, "two ranks trained"
    for key in ("train/loss", "train/tokens_seen", "eval/loss"):
        steps = series(api, run["id"], key)["step"]
        assert steps == sorted(set(steps)), f"one {key} point per step: {steps}"
    assert series(api, run["id"], "train/loss")["step"] == [1, 2, 3, 4]
    assert final["progress"]["current_step"] == 4 and final["tokens_per_second"] > 0

    train_log = (folder / "train.log").read_text()
    assert "[rank 1] " in train_log, "both ranks log into the run's log, each line marked"
    assert train_log.count(f"run {run['id']} claimed by") == 1, "only rank 0 records the start"


def test_a_force_stop_kills_every_rank(api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], **{**QUICK, "max_steps": 5000, "eval_steps": 5000})
    wait_for(lambda: api.get(f"/runs/{run['id']}").json()["progress"]["current_step"] >= 2, 180, 0.1,
             "a few steps")
    processes = training_processes(run["id"])
    assert len(processes) == 3, "torchrun and two ranks"
    response = api.post(f"/runs/{run['id']}/cancel", params={"force": "true"})
    assert response.status_code == 200
    final = wait_finished(api, run["id"], 60)
    assert final["status"] == "canceled" and final["status_reason"].startswith("force-stopped"), final

    def all_gone() -> bool:
        return not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)

    wait_for(all_gone, 30, 0.1, "every rank to die with torchrun")


def test_more_processes_than_the_queue_has_devices_for_are_refused(api, worker, sample_dataset):
    def announced() -> list[dict]:
        return [w for w in api.get("/health").json()["workers"] if QUEUE in w["queues"] and w["devices"]]

    workers = wait_for(announced, 120, 0.25, "the worker to announce its devices")
    cores = max(d.get("cores", 0) for w in workers for d in w["devices"] if d["kind"] == "cpu")
    assert cores == os.cpu_count()
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"],
            "params": {"num_processes": cores + 1}}
    response = api.post("/runs", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and "params.num_processes" in error["message"]
    assert error["details"][0]["field"] == "params.num_processes"

