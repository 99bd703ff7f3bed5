"""Multi-process training on CPU: DDP over gloo, each rank started by torchrun as a worker starts them. Two processes
train the same per-step losses as one process with the same global batch; rank 0 alone reports; a cancel rank 0 sees
stops every rank at the same step with a complete checkpoint, and a resume with as many processes carries on."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tunelab.assets.build import TINY_PARAM_DEFAULTS
from tunelab.training.checkpoints import CHECKPOINTS_DIR, latest_checkpoint
from tunelab.training.registry import resolve_params

HERE = Path(__file__).parent
STEPS = 4
GLOBAL_BATCH = 8
# Losses of the two set-ups agree to float32 round-off only: each rank pads its half-batch to its own longest row
# (one process pads all 8 to the longest of 8), so matrix shapes and summation orders differ, and DDP averages the
# halves' gradients in another order than one backward pass sums them. Measured: relative |Δ| ≤ 8e-8 over 4 steps.
# 1e-5 leaves room for other CPUs' kernels and still fails on a wrong split of the batch (2 × 8 rows instead of 2 × 4
# measured 4e-4 at step 1 and 2e-3 to 6e-3 after), double-counted gradients or another data order.
RELATIVE_TOLERANCE = 1e-5
PARAMS = {"max_steps": STEPS, "seed": 7, "eval_steps": STEPS, "checkpoint_every_steps": 100, "max_length": 64}


def torchrun(assets, folder: Path, processes: int, cancel_after_step: int | None = None, resume: bool = False,
             **params) -> dict:
    """Train LoRA on the tiny model under torchrun; rank 0's record (metrics, progress, summary, checkpoints)."""
    folder.mkdir(exist_ok=True)
    job = {"objective": "sft", "method": "lora", "model": str(assets.tiny_model),
           "dataset_path": str(assets.sample_dataset), "dataset_format": "instruction",
           "params": resolve_params("lora", {**TINY_PARAM_DEFAULTS["lora"], **PARAMS, **params}), "output_dir": str(folder), "resume": resume,
           "cancel_after_step": cancel_after_step}
    job_file, record_file = folder / "job.json", folder / "record.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes),
         str(HERE / "ddp_train.py"), str(job_file), str(record_file)],
        # A rank left training alone (a cancel seen by rank 0 only) waits on the others' gradients until gloo's
        # 30 min timeout: fail long before, though a run here takes under a minute on 2 cores.
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    record = json.loads(record_file.read_text(encoding="utf-8"))
    record["ranks"] = [json.loads(Path(f"{record_file}.rank{rank}").read_text(encoding="utf-8"))
                       for rank in range(processes)]
    return record


def series(record: dict, key: str) -> list[tuple[int, float]]:
    return [(step, values[key]) for step, values in record["metrics"] if key in values]


@pytest.fixture(scope="module")
def two_processes(assets, tmp_path_factory) -> dict:
    return torchrun(assets, tmp_path_factory.mktemp("ddp") / "run", 2, per_device_train_batch_size=GLOBAL_BATCH // 2)


def test_two_processes_train_the_losses_of_one_with_the_same_global_batch(train, two_processes):
    _, one, _ = train("lora", **PARAMS, per_device_train_batch_size=GLOBAL_BATCH)
    expected = one.series("train/loss")
    got = series(two_processes, "train/loss")
    assert [step for step, _ in got] == [step for step, _ in expected] == list(range(1, STEPS + 1))
    for (step, loss), (_, reference) in zip(got, expected, strict=True):
        assert loss == pytest.approx(reference, rel=RELATIVE_TOLERANCE), f"step {step}: {loss} vs {reference}"
    # Both see the same examples: TRL counts the tokens of every rank's share together.
    assert dict(series(two_processes, "train/tokens_seen")) == dict(one.series("train/tokens_seen"))


def test_rank_zero_alone_reports_one_point_per_step(two_processes):
    steps = [step for step, _ in series(two_processes, "train/loss")]
    assert steps == sorted(set(steps)), "one train/loss point per step"
    assert two_processes["progress"] == list(range(1, STEPS + 1))
    assert two_processes["summary"]["trainable_params"] > 0


def test_a_cancel_rank_zero_sees_stops_every_rank_and_a_resume_with_as_many_processes_carries_on(
        assets, tmp_path, two_processes):
    folder = tmp_path / "canceled"
    canceled = torchrun(assets, folder, 2, cancel_after_step=2, per_device_train_batch_size=GLOBAL_BATCH // 2)
    assert [rank["canceled"] for rank in canceled["ranks"]] == [True, True], "every rank stopped on the cancel"
    assert canceled["progress"][-1] == 2
    assert canceled["checkpoints"] == [2]
    checkpoint = latest_checkpoint(folder / CHECKPOINTS_DIR)
    assert checkpoint is not None and checkpoint.name == "checkpoint-2"
    # Complete: rank 0's model, optimizer and trainer state, and each rank's RNG state.
    assert {"adapter_model.safetensors", "optimizer.pt", "trainer_state.json", "rng_state_0.pth",
            "rng_state_1.pth"} <= {p.name for p in checkpoint.iterdir()}

    resumed = torchrun(assets, folder, 2, resume=True, per_device_train_batch_size=GLOBAL_BATCH // 2)
    assert not resumed["canceled"]
    uninterrupted = dict(series(two_processes, "train/loss"))
    got = series(canceled, "train/loss") + series(resumed, "train/loss")
    assert [step for step, _ in got] == list(range(1, STEPS + 1))
    for step, loss in got:
        assert loss == pytest.approx(uninterrupted[step], rel=1e-6), f"step {step} after the resume"
