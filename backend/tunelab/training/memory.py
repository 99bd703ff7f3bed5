"""What a run's model state occupies, counted from the tensors themselves: the figure that tells methods apart on
every device (process RSS on CPU is mostly the Python process and the libraries, whatever the method)."""

import resource
import sys
from typing import TYPE_CHECKING, Any, TypedDict

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

if TYPE_CHECKING:
    import torch
    from torch import nn


class ModelStateBytes(TypedDict):
    weights: int  # every parameter, trainable or frozen, in its own dtype
    gradients: int  # the gradients that exist (a frozen parameter has none)
    optimizer_states: int  # every tensor the optimizer keeps per parameter (AdamW: step, exp_avg, exp_avg_sq)
    total: int


def tensor_bytes(tensor: "torch.Tensor") -> int:
    return int(tensor.numel() * tensor.element_size())


def model_state_bytes(model: "nn.Module", optimizer: "torch.optim.Optimizer | None" = None) -> ModelStateBytes:
    """Bytes of the model's parameters, their gradients and the optimizer's state tensors."""
    import torch

    parameters = list(model.parameters())
    weights = sum(tensor_bytes(p) for p in parameters)
    gradients = sum(tensor_bytes(p.grad) for p in parameters if p.grad is not None)
    optimizer_states = 0
    if optimizer is not None:
        for state in optimizer.state.values():
            optimizer_states += sum(tensor_bytes(v) for v in state.values() if isinstance(v, torch.Tensor))
    return {"weights": weights, "gradients": gradients, "optimizer_states": optimizer_states,
            "total": weights + gradients + optimizer_states}


class ModelStateRecorder(TrainerCallback):
    """Counts the model state right after each optimizer step, the one moment when the gradients and the optimizer
    states both exist (the trainer frees the gradients before the step ends); keeps the largest."""

    def __init__(self) -> None:
        self.peak: ModelStateBytes | None = None

    def on_optimizer_step(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                          **kwargs: Any) -> None:
        model, optimizer = kwargs.get("model"), kwargs.get("optimizer")
        if model is None:
            return
        measured = model_state_bytes(model, optimizer)
        if self.peak is None or measured["total"] > self.peak["total"]:
            self.peak = measured


def cuda_max_allocated_bytes() -> int | None:
    """The most memory torch has held on the CUDA device since the last reset; None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    return int(torch.cuda.max_memory_allocated())


def process_rss_bytes() -> int:
    """The process's resident set size now."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def process_peak_rss_bytes() -> int:
    """The process's peak resident set size (weights, libraries, interpreter, data: everything it touched). On Linux
    the memory map's own high-water mark: getrusage's ru_maxrss keeps, across exec, the peak of the parent's copy
    that the process was forked from, so a training process started by a large worker reported the worker's size."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass  # not Linux
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(max_rss if sys.platform == "darwin" else max_rss * 1024)  # macOS reports bytes, Linux kilobytes
