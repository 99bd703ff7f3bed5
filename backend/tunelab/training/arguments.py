"""The trainer arguments every objective's TRL config shares, from a run's validated params."""

from pathlib import Path
from typing import Any

from tunelab.training.params import TrainingParams


def trainer_arguments(params: TrainingParams, checkpoints_dir: Path, has_eval: bool, resuming: bool) -> dict[str, Any]:
    """Keyword arguments for any TRL config (SFTConfig, DPOConfig …), every setting explicit (TRL's defaults differ
    from transformers')."""
    import torch

    if params.precision != "fp32" and not torch.cuda.is_available():
        raise ValueError(f"precision {params.precision} needs a CUDA GPU; use fp32 on CPU")
    return {
        "output_dir": str(checkpoints_dir),
        "max_steps": params.max_steps or -1,
        "num_train_epochs": params.num_train_epochs,
        "learning_rate": params.learning_rate,
        "lr_scheduler_type": params.lr_scheduler_type,
        "warmup_steps": params.warmup_ratio,  # a float below 1 is a ratio of the total steps
        "per_device_train_batch_size": params.per_device_train_batch_size,
        "per_device_eval_batch_size": params.per_device_train_batch_size,
        "gradient_accumulation_steps": params.gradient_accumulation_steps,
        "max_length": params.max_length,
        "weight_decay": params.weight_decay,
        "eval_strategy": "steps" if has_eval else "no",
        "eval_steps": params.eval_steps,
        # The step-0 eval loss is the baseline runs are compared against; a resumed run has it already.
        "eval_on_start": has_eval and not resuming,
        "logging_steps": params.logging_steps,
        "seed": params.seed,
        "bf16": params.precision == "bf16",
        "fp16": params.precision == "fp16",
        "activation_checkpointing": params.gradient_checkpointing,  # the new name; TRL defaults the old one to True
        "use_cpu": not torch.cuda.is_available(),
        "save_strategy": "steps",
        "save_steps": params.checkpoint_every_steps,
        "save_total_limit": params.checkpoints_to_keep,
        "report_to": "none",
        "disable_tqdm": True,
    }
