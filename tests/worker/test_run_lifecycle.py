"""The spine end to end: HTTP → Redis queue → real Celery worker process → real training → SQL."""

import json
import re

import pytest

from tests.conftest import wait_for, wait_while_progressing
from tests.worker.conftest import FINISHED, bundled_dataset, launch, run_progress, series, wait_finished
from tunelab.services.catalog.models import resolve_model_path


def _statuses_until_finished(api, run_id: int) -> list[str]:
    seen: list[str] = []

    def read():
        run = api.get(f"/runs/{run_id}").json()
        if not seen or seen[-1] != run["status"]:
            seen.append(run["status"])
        return run

    wait_while_progressing(read, lambda run: run["status"] in FINISHED, run_progress, interval=0.05,
                           message=f"run {run_id} to finish")
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
    memory = final["memory"]
    assert memory["model_state_bytes"] == memory["weights_bytes"] + memory["gradients_bytes"] + \
        memory["optimizer_states_bytes"] > 0
    assert memory["process_peak_rss_bytes"] > memory["model_state_bytes"]
    assert final["truncation"] == {"rows": sample_dataset["row_count"], "truncated_rows": 0, "truncated_tokens": 0}

    assert len(series(api, run["id"], "train/loss")["step"]) == 12

    # Evaluation by generation: the predictions the API serves are what the run's scores are the libraries' own of.
    import sacrebleu
    from rouge_score import rouge_scorer

    predictions = api.get(f"/runs/{run['id']}/predictions").json()
    generation = final["generation_eval"]
    rows = predictions["data"]
    assert predictions["count"] == len(rows) == generation["rows_requested"] == generation["tuned"]["rows"] > 0
    tuned, expected = [r["tuned"] for r in rows], [r["expected"] for r in rows]
    rouge = rouge_scorer.RougeScorer(["rougeL"])
    assert generation["tuned"]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(tuned, [expected]).score)
    assert generation["tuned"]["rouge_l"] == pytest.approx(
        sum(rouge.score(e, t)["rougeL"].fmeasure for t, e in zip(tuned, expected)) / len(rows))
    assert generation["base"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu([r["base"] for r in rows], [expected]).score)
    assert series(api, run["id"], "eval/bleu")["step"] == [12]
    assert list(settings.data_dir.joinpath("baselines").glob("*.json")), "the base model's answers are kept"

    listed = {a["path"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["data"]}
    assert any(p.startswith("adapter/") for p in listed), listed
    assert "train.log" in listed
    saved_config = api.get(f"/runs/{run['id']}/artifacts/config.json")
    assert saved_config.status_code == 200 and json.loads(saved_config.content)["method"] == "lora"
    # The model and dataset by their names: the artifact is for anyone who reads the run, a share link included.
    assert json.loads(saved_config.content)["model"] == "tunelab-tiny"
    assert json.loads(saved_config.content)["dataset"] == sample_dataset["name"]
    for server_path in (str(settings.models_dir), str(settings.data_dir), str(settings.artifact_dir)):
        assert server_path not in saved_config.text and server_path not in json.dumps(final)
    log = api.get(f"/runs/{run['id']}/logs").json()
    assert f"run {run['id']} claimed by" in log["text"] and log["next_offset"] == log["size"]

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run_dir = settings.artifact_dir / str(run["id"])
    base_path = resolve_model_path(settings, final["model"])
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


# Trained through the worker by other tests: lora and full here above, ia3 in the study tests.
TRAINED_THROUGH_THE_WORKER_ELSEWHERE = {"lora", "full", "ia3"}


def _registered_methods():
    from tunelab.training.registry import methods_for

    return [m.name for m in methods_for("sft") if not m.requires_cuda]


@pytest.mark.parametrize("method", sorted(set(_registered_methods()) - TRAINED_THROUGH_THE_WORKER_ELSEWHERE))
def test_every_method_trains_through_the_worker(api, worker, sample_dataset, method):
    run = launch(api, method, sample_dataset["id"], max_steps=3, eval_steps=3)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    points = series(api, run["id"], "train/loss")
    assert points["step"] == [1, 2, 3]
    assert final["trainable_params"] > 0


def test_continued_pretraining_through_the_worker_lowers_perplexity(api, worker):
    notes = bundled_dataset(api, "tiny-notes")
    run = launch(api, "full", notes["id"], objective="pretrain", max_steps=12, eval_steps=12, max_length=64,
                 per_device_train_batch_size=4, learning_rate=3e-3)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    assert final["objective"] == "pretrain"
    perplexity = series(api, run["id"], "eval/perplexity")["value"]
    assert len(perplexity) == 2 and perplexity[-1] < perplexity[0] * 0.7


def test_dpo_through_the_worker_raises_the_reward_margin(api, worker):
    preferences = bundled_dataset(api, "tiny-preferences")
    run = launch(api, "lora", preferences["id"], objective="dpo", max_steps=10, eval_steps=10, max_length=64,
                 learning_rate=5e-3)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    margins = series(api, run["id"], "eval/rewards/margins")["value"]
    assert margins[0] == pytest.approx(0.0, abs=1e-6) and margins[-1] > 0.01
    assert series(api, run["id"], "train/rewards/accuracies")["value"]
    assert final["reward_margin"] == pytest.approx(margins[-1])
    assert final["reward_accuracy"] == pytest.approx(series(api, run["id"], "eval/rewards/accuracies")["value"][-1])
    assert final["config"]["params"]["beta"] == 0.1


def test_train_loss_matches_a_bare_trl_script(api, worker, sample_dataset, settings, tmp_path):
    from tests.training.bare_trl import bare_trl_losses
    from tunelab.db.models import Dataset
    from tunelab.db.session import get_sessionmaker
    from tunelab.services.catalog.datasets import dataset_file

    params = {"max_steps": 8, "eval_steps": 8, "seed": 1234}
    run = launch(api, "full", sample_dataset["id"], **params)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    ours = series(api, run["id"], "train/loss")
    with get_sessionmaker()() as session:
        path = dataset_file(settings, session.get(Dataset, sample_dataset["id"]))
    reference = bare_trl_losses(str(resolve_model_path(settings, final["model"])), path, final["config"]["params"], tmp_path,
                                split_seed=final["config"]["dataset"]["split_seed"])
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
    from tunelab.worker.supervisor import execute_run

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


def test_killed_worker_resumes_from_its_checkpoint_on_another_worker(api, start_worker, sample_dataset):
    from tests.conftest import SESSION_TAG

    queue = f"kill-{SESSION_TAG}"
    victim = start_worker(queue)
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"], "queue": queue,
            "params": {"max_steps": 80, "eval_steps": 40, "checkpoint_every_steps": 5}}
    run = api.post("/runs", json=body).json()
    wait_for(lambda: (api.get(f"/runs/{run['id']}").json()["checkpoint_step"] or 0) >= 5, 180, 0.05,
             "the run to save its first checkpoint")
    victim.kill()
    # heartbeat timeout 8 s + reaper interval 1 s (tests/conftest.py), plus slack for a loaded machine.
    requeued = wait_for(lambda: (r := api.get(f"/runs/{run['id']}").json())["status"] == "queued" and r, 60, 0.2,
                        "the reaper to put the lost run back in the queue")
    assert requeued["status_reason"].startswith("worker lost"), requeued["status_reason"]
    assert "resuming from checkpoint at step" in requeued["status_reason"]
    assert requeued["auto_resumes"] == 1 and requeued["attempt"] == 1
    start_worker(queue)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    assert final["attempt"] == 2 and final["progress"]["current_step"] == 80
    steps = series(api, run["id"], "train/loss")["step"]
    assert steps == list(range(1, 81)), "every step once: nothing lost, nothing twice"
    log = api.get(f"/runs/{run['id']}/logs", params={"tail_bytes": 1024 * 1024}).json()["text"]
    assert "attempt 2, training process" in log and "resuming from step" in log


def test_a_worker_given_sigterm_checkpoints_and_requeues_its_run_within_its_grace_period(api, start_worker,
                                                                                        sample_dataset):
    """Issue 25 item 4: a worker being stopped (a deploy, a scale-down: SIGTERM to its main process) has its run stop at
    a checkpoint saved then, puts it back in the queue without spending an automatic resume, and exits well within the
    manifests' grace period; the next worker resumes it from that checkpoint, every step once. The run is far longer
    than the test (the tiny model trains a step in ~20 ms): it is stopped by the shutdown, never by its end."""
    import time

    from tests.conftest import SESSION_TAG

    queue = f"term-{SESSION_TAG}"
    stopping = start_worker(queue)
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"], "queue": queue,
            "params": {"max_steps": 100000, "eval_steps": 100000, "checkpoint_every_steps": 100000,
                       "generation_eval_rows": 0}}
    run = api.post("/runs", json=body).json()
    wait_for(lambda: api.get(f"/runs/{run['id']}").json()["progress"]["current_step"] >= 3, 180, 0.05,
             "the run to train a few steps")
    signalled = time.monotonic()
    stopping.terminate()
    wait_for(lambda: stopping.proc.poll() is not None, 280, 0.1, "the worker to exit within its grace period (300 s)")
    took = time.monotonic() - signalled
    requeued = api.get(f"/runs/{run['id']}").json()
    assert requeued["status"] == "queued", requeued["status_reason"]
    assert requeued["status_reason"].startswith("its worker") and "was shutting down" in requeued["status_reason"]
    step = requeued["checkpoint_step"]
    assert step and step >= 3, "a checkpoint saved as it stopped (none was due before step 100000)"
    assert f"resuming from checkpoint at step {step}" in requeued["status_reason"]
    assert requeued["auto_resumes"] == 0, "a shutdown is not a failure: no automatic resume spent"
    assert stopping.proc.returncode == 0, stopping.log_path.read_text()[-3000:]

    start_worker(queue)
    wait_for(lambda: (r := api.get(f"/runs/{run['id']}").json())["attempt"] == 2 and r["status"] == "running"
             and r["progress"]["current_step"] > step + 3, 180, 0.05, "the next worker to resume the run")
    api.post(f"/runs/{run['id']}/cancel").raise_for_status()
    final = wait_finished(api, run["id"])
    assert final["status"] == "canceled", final["status_reason"]
    log = api.get(f"/runs/{run['id']}/logs", params={"tail_bytes": 1024 * 1024}).json()["text"]
    assert "attempt 2, training process" in log and f"resuming from step {step}" in log
    steps = series(api, run["id"], "train/loss", max_points=100000)["step"]
    assert steps == list(range(1, steps[-1] + 1)) and steps[-1] > step + 3, "every step once, across both workers"
    print(f"worker exited {took:.1f} s after SIGTERM, its run checkpointed at step {step}")


def test_duplicate_delivery_is_dropped_at_once_and_trains_once(api, worker, sample_dataset, settings):
    import re
    import uuid

    from tunelab.worker.broker import get_broker

    run = launch(api, "lora", sample_dataset["id"], max_steps=3, eval_steps=3)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded"
    get_broker().send(run["id"], run["queue"], uuid.uuid4().hex)  # the same run, delivered a second time
    dropped = wait_for(lambda: re.search(rf"run {run['id']} is not queued .*: dropped in ([0-9.]+) ms",
                                         worker.log_path.read_text()), 60, 0.1, "the duplicate delivery to be dropped")
    assert float(dropped.group(1)) < 50, "dropped before any training process starts"
    train_log = (settings.artifact_dir / str(run["id"]) / "train.log").read_text()
    assert train_log.count(f"run {run['id']} claimed by") == 1


def test_a_run_that_fails_in_training_says_why(api, worker, sample_dataset):
    # bf16 passes validation on a queue that is not "cpu" (it may be served by a GPU worker); this worker has none.
    run = launch(api, "lora", sample_dataset["id"], max_steps=3, precision="bf16")
    final = wait_finished(api, run["id"])
    assert final["status"] == "failed"
    assert "needs a CUDA GPU" in final["status_reason"]
    assert "Traceback" in api.get(f"/runs/{run['id']}/logs").json()["text"]
