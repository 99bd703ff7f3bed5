"""The spine end to end: HTTP → Redis queue → real Celery worker process → real training → SQL."""

import json
import re

import pytest

from tests.conftest import wait_for
from tests.worker.conftest import launch, series, wait_finished


def _statuses_until_finished(api, run_id: int, timeout: float = 240) -> list[str]:
    seen: list[str] = []

    def finished():
        status = api.get(f"/runs/{run_id}").json()["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        return status in ("succeeded", "failed", "canceled")

    wait_for(finished, timeout, 0.05, f"run {run_id} to finish")
    return seen


def test_lora_run_trains_in_worker_and_adapter_reloads(api, worker, sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], max_steps=12, eval_steps=6)
    assert run["status"] == "queued"
    statuses = _statuses_until_finished(api, run["id"])
    final = api.get(f"/runs/{run['id']}").json()
    assert final["status"] == "succeeded", final["status_reason"]
    assert "running" in statuses
    assert 0 < final["trainable_percent"] < 100
    assert final["versions"]["torch"] and final["versions"]["trl"]
    assert len(final["config"]["model_identity"]["files_digest"]) == 64
    assert final["dataset_hash"] == sample_dataset["content_hash"]
    assert final["progress"]["current_step"] == 12

    assert len(series(api, run["id"], "train/loss")["step"]) == 12

    listed = {a["path"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["data"]}
    assert any(p.startswith("adapter/") for p in listed), listed
    assert "train.log" in listed
    saved_config = api.get(f"/runs/{run['id']}/artifacts/config.json")
    assert saved_config.status_code == 200 and json.loads(saved_config.content)["method"] == "lora"
    log = api.get(f"/runs/{run['id']}/logs").json()
    assert f"run {run['id']} claimed by" in log["text"] and log["next_offset"] == log["size"]

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run_dir = settings.artifact_dir / str(run["id"])
    base_path = final["config"]["model_path"]
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_path), run_dir / "adapter").eval()
    sample = json.loads((run_dir / "samples.jsonl").read_text().splitlines()[0])
    with torch.no_grad():
        ids = tokenizer(sample["prompt"], return_tensors="pt")
        logits = model(**ids).logits[0, -1, : len(sample["logits"])]
    assert torch.allclose(logits, torch.tensor(sample["logits"]), atol=1e-5)


def test_full_sft_eval_loss_goes_down(api, worker, sample_dataset):
    run = launch(api, "full", sample_dataset["id"], max_steps=30, eval_steps=10)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    eval_loss = series(api, run["id"], "eval/loss")
    assert len(eval_loss["value"]) >= 2
    assert eval_loss["value"][-1] < eval_loss["value"][0]
    assert final["trainable_percent"] == pytest.approx(100.0)
    assert final["final_eval_loss"] == pytest.approx(eval_loss["value"][-1])


def _registered_methods():
    from tunelab.training.registry import list_methods

    return [m.name for m in list_methods() if "sft" in m.objectives]


@pytest.mark.parametrize("method", _registered_methods())
def test_every_method_trains_through_the_worker(api, worker, sample_dataset, method):
    run = launch(api, method, sample_dataset["id"], max_steps=3, eval_steps=3)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    points = series(api, run["id"], "train/loss")
    assert points["step"] == [1, 2, 3]
    assert final["trainable_params"] > 0


def test_train_loss_matches_a_bare_trl_script(api, worker, sample_dataset, settings, tmp_path):
    from tests.training.bare_trl import bare_trl_losses
    from tunelab.db.models import Dataset
    from tunelab.db.session import get_sessionmaker
    from tunelab.services.datasets import dataset_file

    params = {"max_steps": 8, "eval_steps": 8, "seed": 1234}
    run = launch(api, "full", sample_dataset["id"], **params)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    ours = series(api, run["id"], "train/loss")
    with get_sessionmaker()() as session:
        path = dataset_file(settings, session.get(Dataset, sample_dataset["id"]))
    reference = bare_trl_losses(final["config"]["model_path"], path, final["config"]["params"], tmp_path)
    assert len(ours["value"]) == len(reference) == 8
    for step, (a, b) in enumerate(zip(ours["value"], reference, strict=True), start=1):
        assert abs(a - b) <= 1e-6, f"step {step}: tunelab {a} vs bare TRL {b}"


def test_cancel_running_run_stops_within_two_steps(api, worker, sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], max_steps=5000, eval_steps=5000)
    wait_for(lambda: api.get(f"/runs/{run['id']}").json()["progress"]["current_step"] >= 3, 180, 0.1,
             "the run to train a few steps")
    assert 0 < api.get(f"/runs/{run['id']}").json()["trainable_percent"] < 100, "the cost shows while training"
    response = api.post(f"/runs/{run['id']}/cancel")
    assert response.status_code == 200 and response.json()["cancel_requested"]
    final = wait_finished(api, run["id"], 60)
    assert final["status"] == "canceled"
    match = re.search(r"at step (\d+) \(cancel seen at step (\d+)\)", final["status_reason"])
    assert match, final["status_reason"]
    stopped, seen = int(match.group(1)), int(match.group(2))
    assert stopped - seen <= 2
    assert stopped < 5000
    listed = {a["path"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["data"]}
    assert any(p.startswith("adapter/") for p in listed), "partial adapter saved on cancel"
    assert api.post(f"/runs/{run['id']}/cancel").json()["error"]["code"] == "RUN_FINISHED"


def test_cancel_queued_run_never_starts(api, sample_dataset):
    from tests.conftest import SESSION_TAG
    from tunelab.services.execution import execute_run

    queue = f"nobody-{SESSION_TAG}"  # no worker consumes it, and no other test queues runs there
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"], "queue": queue}
    run = api.post("/runs", json=body).json()
    assert run["queue_position"] == 1
    canceled = api.post(f"/runs/{run['id']}/cancel").json()
    assert canceled["status"] == "canceled"
    # The message is still in Redis; when a worker gets it, the claim finds no queued run and trains nothing.
    assert execute_run(run["id"], "test-worker") is None
    final = api.get(f"/runs/{run['id']}").json()
    assert final["status"] == "canceled" and final["started_at"] is None and final["worker"] is None


def test_killed_worker_fails_run_as_worker_lost(api, start_worker, sample_dataset):
    from tests.conftest import SESSION_TAG

    queue = f"kill-{SESSION_TAG}"
    victim = start_worker(queue)
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"], "queue": queue,
            "params": {"max_steps": 5000, "eval_steps": 5000}}
    run = api.post("/runs", json=body).json()
    wait_for(lambda: api.get(f"/runs/{run['id']}").json()["progress"]["current_step"] >= 2, 180, 0.1,
             "the run to start training")
    victim.kill()
    # heartbeat timeout 8 s + reaper interval 1 s (tests/conftest.py), plus slack for a loaded machine.
    final = wait_finished(api, run["id"], timeout=30)
    assert final["status"] == "failed"
    assert final["status_reason"].startswith("worker lost")


def test_duplicate_delivery_trains_once(api, worker, sample_dataset, settings):
    from tunelab.worker.dispatch import send_train_run

    run = launch(api, "lora", sample_dataset["id"], max_steps=3, eval_steps=3)
    send_train_run(run["id"], run["queue"])  # the same task, delivered a second time
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded"
    log = worker.log_path.read_text()
    wait_for(lambda: f"run {run['id']} is not queued" in worker.log_path.read_text(), 60, 0.2,
             "the duplicate delivery to be refused")
    train_log = (settings.artifact_dir / str(run["id"]) / "train.log").read_text()
    assert train_log.count(f"run {run['id']} claimed by") == 1, log[-2000:]


def test_a_run_that_fails_in_training_says_why(api, worker, sample_dataset):
    # bf16 passes validation on a queue that is not "cpu" (it may be served by a GPU worker); this worker has none.
    run = launch(api, "lora", sample_dataset["id"], max_steps=3, precision="bf16")
    final = wait_finished(api, run["id"])
    assert final["status"] == "failed"
    assert "needs a CUDA GPU" in final["status_reason"]
    assert "Traceback" in api.get(f"/runs/{run['id']}/logs").json()["text"]
