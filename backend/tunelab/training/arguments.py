"""What every objective's TRL trainer shares: its config's arguments from a run's validated params, and the trainer's
own arguments (model, datasets, tokenizer, PEFT config, callbacks) from the engine's inputs."""

import math
import os
from typing import Any

from tunelab.training.params import TrainingParams
from tunelab.training.registry import TrainerInputs


def trainer_arguments(inputs: TrainerInputs) -> dict[str, Any]:
    """Keyword arguments for any TRL config (SFTConfig, DPOConfig …), every setting explicit (TRL's defaults differ
    from transformers')."""
    import torch

    params: TrainingParams = inputs.params
    checkpoints_dir, has_eval, resuming = inputs.checkpoints_dir, bool(inputs.eval_records), inputs.resuming

    if params.precision != "fp32" and not torch.cuda.is_available():
        raise ValueError(f"precision {params.precision} needs a CUDA GPU; use fp32 on CPU")
    if params.zero_stage and not torch.cuda.is_available():
        raise ValueError(f"DeepSpeed ZeRO-{params.zero_stage} needs CUDA GPUs; use zero_stage 0 (plain DDP) on CPU")
    multi_process = int(os.environ.get("WORLD_SIZE", "1")) > 1  # set by torchrun for each of its processes
    return {
        "output_dir": str(checkpoints_dir),
        "max_steps": params.max_steps or -1,
        "num_train_epochs": params.num_train_epochs,
        "learning_rate": params.learning_rate,
        "lr_scheduler_type": params.lr_scheduler_type,
        "warmup_steps": warmup_steps(params.warmup_ratio, params.max_steps),
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
        # The process group of a multi-process run (torchrun): gloo over CPU (accelerate would take MPI where torch
        # has it); on CUDA, None lets accelerate take nccl. A single process must not name one: accelerate then
        # expects a process group that nothing started.
        "ddp_backend": "gloo" if multi_process and not torch.cuda.is_available() else None,
        "deepspeed": deepspeed_config(params.zero_stage) if params.zero_stage else None,
        "save_strategy": "steps",
        "save_steps": params.checkpoint_every_steps,
        "save_total_limit": params.checkpoints_to_keep,
        "report_to": "none",
        "disable_tqdm": True,
    }


def warmup_steps(warmup_ratio: float, max_steps: int | None) -> float | int:
    """The warmup as transformers takes it: whole steps when the run's length is known, else the ratio.

    transformers rounds a ratio's steps up, and its linear warmup's first step has a learning rate of 0: 3 % of a
    33-step run made one warmup step, so the run's first step learned nothing. Whole steps are rounded down here, so
    a warmup shorter than a step is none. A run of epochs keeps the ratio (its length is known once the trainer
    counts its batches); its resolved steps are in the run's config.json."""
    if max_steps:
        return math.floor(warmup_ratio * max_steps)
    return warmup_ratio


def deepspeed_config(zero_stage: int) -> dict[str, Any]:
    """DeepSpeed ZeRO at `zero_stage` (2: optimizer states and gradients sharded, 3: the weights too). "auto" takes
    batch sizes, accumulation, clipping and precision from the trainer's own arguments, so the two cannot disagree."""
    zero: dict[str, Any] = {"stage": zero_stage, "overlap_comm": True, "contiguous_gradients": True}
    if zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True  # the saved model holds whole weights, not shards
    return {
        "zero_optimization": zero,
        "train_micro_batch_size_per_gpu": "auto",
        "train_batch_size": "auto",
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "bf16": {"enabled": "auto"},
        "fp16": {"enabled": "auto"},
    }


def trainer_inputs(inputs: TrainerInputs) -> dict[str, Any]:
    """Keyword arguments for any TRL trainer beside `args`: the model, the splits as datasets, the tokenizer, the
    PEFT config and the callbacks."""
    from datasets import Dataset

    return {
        "model": inputs.model,
        "train_dataset": Dataset.from_list(inputs.train_records),
        "eval_dataset": Dataset.from_list(inputs.eval_records) if inputs.eval_records else None,
        "processing_class": inputs.tokenizer,
        "peft_config": inputs.peft_config,
        "callbacks": inputs.callbacks,
    }
