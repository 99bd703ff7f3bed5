"""A run's training process under faults and stops: SIGKILL mid-run resumes from the checkpoint with the losses of an
uninterrupted run; a cancel ends the run within seconds with a checkpoint; a force stop kills a process that will
not stop."""

import re
import signal
import time
from datetime import datetime

import psutil

from tests.conftest import wait_for
from tests.worker.conftest import launch, series, training_process, wait_finished

# How train.log stamps its lines (logging's asctime, local time).
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*cancel seen at step (\d+)", re.M)


def _run(api, run_id: int) -> dict:
    return api.get(f"/runs/{run_id}").json()


def test_sigkill_of_the_training_process_resumes_from_its_checkpoint_with_identical_losses(
        api, worker, sample_dataset):
    params = {"max_steps": 30, "eval_steps": 10, "checkpoint_every_steps": 5, "seed": 11}
    reference = launch(api, "lora", sample_dataset["id"], **params)
    victim = launch(api, "lora", sample_dataset["id"], **params)
    assert wait_finished(api, reference["id"])["status"] == "succeeded"
    wait_for(lambda: (_run(api, victim["id"])["checkpoint_step"] or 0) >= 5, 180, 0.05, "a first checkpoint")
    process = training_process(api, victim["id"])
    process.send_signal(signal.SIGKILL)
    killed_at_step = _run(api, victim["id"])["progress"]["current_step"]

    final = wait_finished(api, victim["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    assert final["attempt"] == 2 and final["auto_resumes"] == 1
    assert killed_at_step < params["max_steps"]
    ours, theirs = series(api, victim["id"], "train/loss"), series(api, reference["id"], "train/loss")
    assert ours["step"] == theirs["step"] == list(range(1, 31)), "every step once"
    for step, a, b in zip(ours["step"], ours["value"], theirs["value"], strict=True):
        assert abs(a - b) <= 1e-6, f"step {step}: resumed {a} vs uninterrupted {b}"
    log = api.get(f"/runs/{victim['id']}/logs", params={"tail_bytes": 1024 * 1024}).json()["text"]
    assert "resuming from step" in log
    listed = {a["path"] for a in api.get(f"/runs/{victim['id']}/artifacts").json()["data"]}
    assert any(p.startswith("checkpoints/checkpoint-") for p in listed) and "train.log" in listed


def test_a_cancel_ends_the_run_within_five_seconds_of_being_seen_with_a_checkpoint(api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=5000, eval_steps=2, checkpoint_every_steps=1000)
    wait_for(lambda: _run(api, run["id"])["progress"]["current_step"] >= 3, 180, 0.05, "a few steps")
    assert api.post(f"/runs/{run['id']}/cancel").status_code == 200
    final = wait_finished(api, run["id"], 60)
    assert final["status"] == "canceled", final["status_reason"]
    log = api.get(f"/runs/{run['id']}/logs", params={"tail_bytes": 1024 * 1024}).json()["text"]
    seen = LOG_TIME.search(log)
    assert seen, log[-2000:]
    seen_at = datetime.strptime(seen.group(1), "%Y-%m-%d %H:%M:%S,%f").astimezone()
    finished_at = datetime.fromisoformat(final["finished_at"])
    assert (finished_at - seen_at).total_seconds() < 5, f"canceled {finished_at - seen_at} after the cancel was seen"
    stopped = final["progress"]["current_step"]
    assert final["checkpoint_step"] == stopped, "the state at the stop is kept as a checkpoint"
    eval_steps = series(api, run["id"], "eval/loss")["step"]
    assert max(eval_steps) <= int(seen.group(2)) + 1, "no evaluation after the cancel"
    listed = {a["path"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["data"]}
    assert "samples.jsonl" not in listed and any(p.startswith("adapter/") for p in listed)

    resumed = api.post(f"/runs/{run['id']}/resume")
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "queued"
    wait_for(lambda: _run(api, run["id"])["progress"]["current_step"] > stopped, 180, 0.1, "the resumed run to train")
    assert api.post(f"/runs/{run['id']}/cancel").status_code == 200
    again = wait_finished(api, run["id"], 60)
    assert again["status"] == "canceled" and again["attempt"] == 2
    steps = series(api, run["id"], "train/loss", max_points=10_000)["step"]
    assert steps == list(range(1, again["progress"]["current_step"] + 1)), "continued from the checkpoint"


def test_a_force_stop_kills_the_training_process_at_once(api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=5000, eval_steps=5000)
    wait_for(lambda: _run(api, run["id"])["progress"]["current_step"] >= 2, 180, 0.05, "a few steps")
    process = training_process(api, run["id"])
    process.send_signal(signal.SIGSTOP)  # stuck: it will never reach the end of its step
    try:
        asked = time.monotonic()
        response = api.post(f"/runs/{run['id']}/cancel", params={"force": "true"})
        assert response.status_code == 200 and response.json()["force_stop_requested"]
        final = wait_finished(api, run["id"], 60)
        assert time.monotonic() - asked < 30
    finally:
        if process.is_running():
            process.send_signal(signal.SIGCONT)
    assert final["status"] == "canceled"
    assert final["status_reason"].startswith("force-stopped at step"), final["status_reason"]
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
