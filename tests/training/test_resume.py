"""Checkpoints and resume in the engine: a run stopped part-way and resumed from its checkpoint logs the same
per-step losses as one that never stopped, and a cancel stops at once, with a checkpoint and no evaluation."""

import json

import pytest

from tunelab.training.checkpoints import CHECKPOINTS_DIR, latest_checkpoint
from tunelab.training.engine import run_training
from tunelab.training.registry import resolve_params
from tunelab.training.sink import TrainingJob

from .conftest import RecordingSink

STEPS = 12


def _job(assets, folder, method: str, resume: bool = False, **params) -> TrainingJob:
    folder.mkdir(exist_ok=True)
    return TrainingJob(objective="sft", method=method, model=str(assets.tiny_model), dataset_path=assets.sample_dataset,
                       dataset_format="instruction", params=resolve_params(method, params), output_dir=folder,
                       resume=resume)


@pytest.mark.parametrize("method", ["lora", "full"])
def test_resumed_run_logs_the_same_losses_as_an_uninterrupted_one(assets, tmp_path, method):
    params = {"max_steps": STEPS, "eval_steps": 4, "checkpoint_every_steps": 4, "seed": 7}
    straight = RecordingSink()
    run_training(_job(assets, tmp_path / "straight", method, **params), straight)

    interrupted = RecordingSink(cancel_after_step=6)
    first = run_training(_job(assets, tmp_path / "resumed", method, **params), interrupted)
    assert first.canceled
    assert interrupted.checkpoints == [4, 6], "a checkpoint every 4 steps, and one on cancel"
    resumed = RecordingSink()
    second = run_training(_job(assets, tmp_path / "resumed", method, resume=True, **params), resumed)
    assert not second.canceled

    expected = dict(straight.series("train/loss"))
    assert [step for step, _ in resumed.series("train/loss")] == list(range(7, STEPS + 1))
    for step, loss in interrupted.series("train/loss") + resumed.series("train/loss"):
        assert abs(loss - expected[step]) <= 1e-6, f"step {step}: {loss} vs {expected[step]} uninterrupted"
    # Tokens seen carry on across the resume instead of starting again from zero.
    assert dict(resumed.series("train/tokens_seen"))[STEPS] == dict(straight.series("train/tokens_seen"))[STEPS]
    assert [step for step, _ in resumed.series("eval/loss")] == [8, 12], "no second step-0 baseline on resume"


def test_cancel_stops_at_the_next_step_saves_a_checkpoint_and_skips_eval_and_samples(assets, tmp_path):
    sink = RecordingSink(cancel_after_step=3)
    job = _job(assets, tmp_path / "run", "lora", max_steps=200, eval_steps=4, checkpoint_every_steps=100)
    result = run_training(job, sink)
    assert result.canceled
    assert sink.progress_calls[-1][0] == 3, "stopped right after the step at which the cancel was seen"
    assert [step for step, _ in sink.series("eval/loss")] == [0], "no evaluation after the cancel"
    assert not (job.output_dir / "samples.jsonl").exists(), "no sample generation after the cancel"
    checkpoint = latest_checkpoint(job.output_dir / CHECKPOINTS_DIR)
    assert checkpoint is not None and checkpoint.name == "checkpoint-3"
    assert {"optimizer.pt", "scheduler.pt", "trainer_state.json", "adapter_model.safetensors"} <= {
        p.name for p in checkpoint.iterdir()}
    assert (job.output_dir / "adapter" / "adapter_config.json").exists(), "the partial adapter is kept too"


def test_only_the_newest_checkpoints_are_kept_and_a_half_written_one_is_passed_over(assets, tmp_path):
    job = _job(assets, tmp_path / "run", "lora", max_steps=6, eval_split=0, checkpoint_every_steps=2,
               checkpoints_to_keep=2)
    run_training(job, RecordingSink())
    folder = job.output_dir / CHECKPOINTS_DIR
    assert sorted(p.name for p in folder.glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-6"]
    (folder / "checkpoint-8").mkdir()  # a save cut short: no trainer_state.json
    (folder / "checkpoint-8" / "adapter_model.safetensors").write_bytes(b"partial")
    assert latest_checkpoint(folder).name == "checkpoint-6"
    state = json.loads((folder / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["global_step"] == 6
