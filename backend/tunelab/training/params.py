"""The training parameters every method shares; each method's config model extends this one."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LrSchedulerName = Literal[
    "linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup", "inverse_sqrt"
]
Precision = Literal["fp32", "bf16", "fp16"]
ZeroStage = Literal[0, 2, 3]


class TrainingParams(BaseModel):
    """Optimisation, data split and logging settings common to all methods."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(
        60,
        ge=0,
        title="Max steps",
        description="Optimizer steps to run; 0 or empty trains for the number of epochs instead",
    )
    num_train_epochs: float = Field(
        1.0, gt=0, le=100, title="Epochs", description="Passes over the training split (when max_steps is 0)"
    )
    learning_rate: float = Field(1e-3, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    lr_scheduler_type: LrSchedulerName = Field(
        "linear", title="LR schedule", description="How the learning rate decays after warmup"
    )
    warmup_ratio: float = Field(
        0.03, ge=0, lt=1, title="Warmup ratio", description="Fraction of the steps spent warming the learning rate up"
    )
    per_device_train_batch_size: int = Field(
        8, ge=1, le=1024, title="Batch size per device", description="Examples per device per forward pass"
    )
    gradient_accumulation_steps: int = Field(
        1, ge=1, le=1024, title="Gradient accumulation steps", description="Forward passes summed into one step"
    )
    max_length: int = Field(
        256,
        ge=8,
        le=131072,
        title="Max length (tokens)",
        description="Longest tokenized example; longer ones are truncated",
    )
    weight_decay: float = Field(0.0, ge=0, le=1, title="Weight decay", description="AdamW decoupled weight decay")
    eval_split: float = Field(
        0.1,
        ge=0,
        lt=1,
        title="Eval split",
        description="Fraction of the dataset held out for evaluation: the same rows for every run of the dataset "
        "(its split seed picks them); 0 disables eval",
    )
    eval_steps: int = Field(
        10, ge=1, title="Eval every (steps)", description="Evaluate on the held-out split every this many steps"
    )
    generation_eval_rows: int = Field(
        16,
        ge=0,
        le=1000,
        title="Generation eval rows",
        description="Held-out rows the model answers (greedy) after training, scored against the expected answers by "
        "exact match, ROUGE-L and BLEU beside the base model's answers; 0 turns evaluation by generation off",
    )
    generation_max_new_tokens: int = Field(
        32,
        ge=1,
        le=2048,
        title="Generation eval max new tokens",
        description="Longest answer generated for evaluation by generation",
    )
    generation_eval_at_each_eval: bool = Field(
        False,
        title="Generation eval at each eval",
        description="Also answer and score the generation eval rows at every eval step (charts of eval/exact_match, "
        "eval/rouge_l and eval/bleu), at the cost of generating at each eval",
    )
    logging_steps: int = Field(
        1, ge=1, title="Log every (steps)", description="Record training metrics every this many steps"
    )
    seed: int = Field(
        42,
        ge=0,
        title="Seed",
        description="Seed for weight init of added parameters and data order (the eval split is the dataset's)",
    )
    precision: Precision = Field(
        "fp32",
        title="Precision",
        description="fp32, or bf16/fp16 mixed precision (weights stay fp32); bf16/fp16 need a GPU",
    )
    checkpoint_every_steps: int = Field(
        100,
        ge=1,
        title="Checkpoint every (steps)",
        description="Save model or adapter, optimizer, scheduler, RNG and data position this often; a run whose "
        "worker is lost, or that is canceled and resumed, continues from the newest checkpoint",
    )
    checkpoints_to_keep: int = Field(
        2, ge=1, le=100, title="Checkpoints kept", description="Older checkpoints are deleted as newer ones are saved"
    )
    gradient_checkpointing: bool = Field(
        False,
        title="Gradient checkpointing",
        description="Recompute activations in the backward pass: less memory, about a third slower",
    )
    num_processes: int = Field(
        1,
        ge=1,
        le=64,
        title="Processes",
        description="Data-parallel training processes (DDP): one per GPU on a GPU queue, over CPU cores (gloo) on "
        "the cpu queue; each takes its own share of every batch, so the global batch is processes × batch size per "
        "device × accumulation steps",
    )
    zero_stage: ZeroStage = Field(
        0,
        title="DeepSpeed ZeRO stage",
        description="0: plain DDP, every process holds the whole model state; 2: optimizer states and gradients "
        "sharded across the GPUs; 3: the weights too. GPU queues only (workers with the deepspeed extra)",
    )
