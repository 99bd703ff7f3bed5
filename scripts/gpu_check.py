"""On a CUDA machine: train bf16 LoRA, QLoRA, DoRA and DPO a few steps each on SmolLM2 through the engine, and print
each run's CUDA peak beside the estimator's total for it (the estimate is checked to be within ±15 %).

Usage: python scripts/gpu_check.py [SMOLLM2_DIR] (default: var/models/smollm2-135m-instruct, from `make models`)
Exits 1 when a run fails or an estimate is off by more than the tolerance; 2 when there is no CUDA device.
"""

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOLERANCE = 0.15
CHECKS = [  # (objective, method, dataset file, dataset format, params)
    ("sft", "lora", "tiny-tasks.jsonl", "instruction", {"precision": "bf16"}),
    ("sft", "qlora", "tiny-tasks.jsonl", "instruction", {"precision": "bf16"}),
    ("sft", "dora", "tiny-tasks.jsonl", "instruction", {"precision": "bf16"}),
    ("dpo", "lora", "tiny-preferences.jsonl", "preference", {"precision": "bf16"}),
]
COMMON = {"max_steps": 5, "eval_steps": 5, "per_device_train_batch_size": 8, "max_length": 256}


class RecordingSink:
    """A RunSink that keeps the summary and the last losses in memory."""

    def __init__(self) -> None:
        self.summary: dict[str, Any] = {}
        self.losses: list[float] = []

    def phase(self, phase: str) -> None:
        pass

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        if "train/loss" in values:
            self.losses.append(values["train/loss"])

    def progress(self, step: int, total_steps: int) -> None:
        pass

    def should_cancel(self) -> bool:
        return False

    def set_summary(self, values: dict[str, Any]) -> None:
        self.summary.update(values)

    def checkpoint_saved(self, step: int) -> None:
        pass

    def flush(self) -> None:
        pass


def main() -> int:
    import torch

    from tunelab.assets.build import build_assets
    from tunelab.training import estimator
    from tunelab.training.engine import run_training
    from tunelab.training.registry import get_method, get_objective, params_model, resolve_params
    from tunelab.training.sink import TrainingJob

    if not torch.cuda.is_available():
        print("no CUDA device: this check runs on a GPU machine only")
        return 2
    model_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "var" / "models" / "smollm2-135m-instruct"
    work = Path(tempfile.mkdtemp(prefix="tunelab-gpu-check-"))
    build_assets(work / "models", work / "samples")
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, model {model_dir}")
    header = f"{'objective':9} {'method':6} {'loss first→last':>17} {'tok/s':>8} {'CUDA peak MiB':>14} " \
             f"{'estimate MiB':>13} {'Δ':>7}  result"
    print(header)
    failed = False
    for objective, method, dataset, dataset_format, extra in CHECKS:
        params = resolve_params(method, {**COMMON, **extra}, objective)
        job = TrainingJob(objective=objective, method=method, model=str(model_dir),
                          dataset_path=work / "samples" / dataset, dataset_format=dataset_format, params=params,
                          output_dir=work / f"{objective}-{method}")
        job.output_dir.mkdir()
        sink = RecordingSink()
        started = time.perf_counter()
        try:
            run_training(job, sink)
        except Exception as exc:  # noqa: BLE001  (report every check, then fail)
            print(f"{objective:9} {method:6} failed after {time.perf_counter() - started:.0f} s: {exc!r}")
            failed = True
            continue
        validated = params_model(objective, method).model_validate(params)
        estimate = estimator.estimate_memory(str(model_dir), get_method(method), validated, 1, get_objective(objective))
        estimated = estimate["per_device_bytes"][0]
        peak = int(sink.summary.get("cuda_peak_memory_bytes") or 0)
        off = (estimated - peak) / peak if peak else float("inf")
        ok = abs(off) <= TOLERANCE and len(sink.losses) == COMMON["max_steps"]
        failed |= not ok
        losses = f"{sink.losses[0]:8.3f}→{sink.losses[-1]:<8.3f}" if sink.losses else f"{'none':>17}"
        print(f"{objective:9} {method:6} {losses} "
              f"{sink.summary.get('tokens_per_second', 0):8.0f} {peak / 2**20:14.1f} {estimated / 2**20:13.1f} "
              f"{off:+7.1%}  {'ok' if ok else 'OFF'}")
        (work / f"{objective}-{method}.json").write_text(json.dumps({"summary": sink.summary, "estimate": estimate}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
