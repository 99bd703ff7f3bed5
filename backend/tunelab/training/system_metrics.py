"""The training process's own resource use over time (CPU, resident memory, and the GPU where there is one), logged
through the run's sink like any other metric, so it lands in the metric table and reaches the live charts."""

import time
from collections.abc import Callable
from typing import Any

import psutil
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from tunelab.training.sink import RunSink

SYSTEM_PREFIX = "system/"
DEFAULT_INTERVAL_S = 5.0


def cuda_sample() -> dict[str, float]:
    """This process's allocated CUDA memory and the device's utilisation; nothing without CUDA (or without NVML,
    which torch.cuda.utilization needs, for the utilisation)."""
    import torch

    if not torch.cuda.is_available():
        return {}
    values = {"system/gpu_memory_bytes": float(torch.cuda.memory_allocated())}
    try:
        values["system/gpu_utilization_percent"] = float(torch.cuda.utilization())
    except Exception:  # noqa: BLE001  (no pynvml, or NVML refuses: the memory figure still stands)
        pass
    return values


class SystemMetricsRecorder(TrainerCallback):
    """Samples the process at the first step, then at the first step end at least `interval_s` after the last sample,
    and at the end of training.

    The step of a sample is the trainer's global step, not a sample counter: the run page plots every metric on one
    x axis (step, time or tokens seen) and zooms all its charts together, which only a shared step makes line up
    ("memory grew at step 40, where the eval started"). A step keeps its first sample (points are idempotent on
    run, key and step), so at most one sample per step is taken.
    """

    def __init__(self, sink: RunSink, interval_s: float = DEFAULT_INTERVAL_S,
                 gpu_sample: Callable[[], dict[str, float]] = cuda_sample) -> None:
        self.sink = sink
        self.interval_s = interval_s
        self.gpu_sample = gpu_sample
        self._process = psutil.Process()
        self._last_sample: float | None = None
        self._last_step = -1

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       **kwargs: Any) -> None:
        # psutil's CPU percent is the use since its previous call: this first call starts the clock.
        self._process.cpu_percent(interval=None)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        due = self._last_sample is None or time.monotonic() - self._last_sample >= self.interval_s
        if due:
            self.sample(state.global_step)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: Any) -> None:
        self.sample(state.global_step)

    def sample(self, step: int) -> None:
        """Log one sample at `step`, unless that step has one already."""
        if step <= self._last_step:
            return
        self._last_step, self._last_sample = step, time.monotonic()
        values = {
            # Percent of one core: above 100 when the process keeps several cores busy, as torch's threads do.
            "system/cpu_percent": float(self._process.cpu_percent(interval=None)),
            "system/rss_bytes": float(self._process.memory_info().rss),
            **self.gpu_sample(),
        }
        self.sink.log_metrics(step, values, time.time())
