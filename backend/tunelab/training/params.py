"""The training parameters every method shares; each method's config model extends this one."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LrSchedulerName = Literal[
    "linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup", "inverse_sqrt"
]
Precision = Literal["fp32", "bf16", "fp16"]


class TrainingParams(BaseModel):
    """Optimisation, data split and logging settings common to all methods."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(
        60, ge=0, description="Optimizer steps to run; 0 or empty trains for num_train_epochs instead"
    )
    num_train_epochs: float = Field(
        1.0, gt=0, le=100, description="Passes over the training split (when max_steps is 0)"
    )
    learning_rate: float = Field(1e-3, gt=0, le=1.0, description="Peak learning rate of AdamW")
    lr_scheduler_type: LrSchedulerName = Field("linear", description="How the learning rate decays after warmup")
    warmup_ratio: float = Field(0.0, ge=0, lt=1, description="Fraction of the steps spent warming the learning rate up")
    per_device_train_batch_size: int = Field(8, ge=1, le=1024, description="Examples per device per forward pass")
    gradient_accumulation_steps: int = Field(1, ge=1, le=1024, description="Forward passes summed into one step")
    max_length: int = Field(256, ge=8, le=131072, description="Longest tokenized example; longer ones are truncated")
    weight_decay: float = Field(0.0, ge=0, le=1, description="AdamW decoupled weight decay")
    eval_split: float = Field(
        0.1, ge=0, lt=1, description="Fraction of the dataset held out for evaluation (chosen by seed); 0 disables eval"
    )
    eval_steps: int = Field(10, ge=1, description="Evaluate on the held-out split every this many steps")
    logging_steps: int = Field(1, ge=1, description="Record training metrics every this many steps")
    seed: int = Field(42, ge=0, description="Seed for weight init of added parameters, data order and eval split")
    precision: Precision = Field(
        "fp32", description="fp32, or bf16/fp16 mixed precision (weights stay fp32); bf16/fp16 need a GPU"
    )
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in the backward pass: less memory, about a third slower"
    )
