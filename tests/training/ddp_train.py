"""One training job under torchrun, for the multi-process tests:

    python -m torch.distributed.run --standalone --nproc-per-node N tests/training/ddp_train.py JOB.json RECORD.json

JOB.json holds the TrainingJob's fields (and `cancel_after_step`, for rank 0's sink). Rank 0 reports to a sink that
keeps what it is told and writes it to RECORD.json at the end; the other ranks get the SilentSink, as a worker's do.
"""

import json
import sys
from pathlib import Path
from typing import Any

from tunelab.core.processes import die_with_parent
from tunelab.training.distributed import is_main_process, process_rank
from tunelab.training.engine import run_training
from tunelab.training.sink import SilentSink, TrainingJob


class RecordingFileSink:
    def __init__(self, cancel_after_step: int | None) -> None:
        self.cancel_after_step = cancel_after_step
        self.record: dict[str, Any] = {"metrics": [], "progress": [], "summary": {}, "checkpoints": []}

    def phase(self, phase: str) -> None:
        pass

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        self.record["metrics"].append([step, values])

    def progress(self, step: int, total_steps: int) -> None:
        self.record["progress"].append(step)

    def should_cancel(self) -> bool:
        steps = self.record["progress"]
        return self.cancel_after_step is not None and bool(steps) and steps[-1] >= self.cancel_after_step

    def set_summary(self, values: Any) -> None:
        self.record["summary"].update(values)

    def checkpoint_saved(self, step: int) -> None:
        self.record["checkpoints"].append(step)

    def flush(self) -> None:
        pass


def main(job_path: str, record_path: str) -> None:
    die_with_parent()  # as a worker's ranks do: a test that kills torchrun on its timeout leaves no rank behind
    spec = json.loads(Path(job_path).read_text(encoding="utf-8"))
    cancel_after_step = spec.pop("cancel_after_step", None)
    job = TrainingJob(**{**spec, "dataset_path": Path(spec["dataset_path"]), "output_dir": Path(spec["output_dir"])})
    sink = RecordingFileSink(cancel_after_step) if is_main_process() else SilentSink()
    result = run_training(job, sink)
    # Every rank says how it ended: a cancel seen by rank 0 alone must stop them all.
    ending = {"canceled": result.canceled}
    Path(f"{record_path}.rank{process_rank()}").write_text(json.dumps(ending), encoding="utf-8")
    if isinstance(sink, RecordingFileSink):
        Path(record_path).write_text(json.dumps({**sink.record, **ending}), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
