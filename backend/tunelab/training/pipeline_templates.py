"""Pipeline templates: the chains of runs that start from runs that the launch form offers (RLHF as DeepSpeed-Chat's
three steps, DPO after SFT, continued pretraining then SFT). A template is only a starting point: every stage's
dataset and params are the user's to change, and the pipeline keeps what was launched, not the template."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StageTemplate:
    name: str
    objective: str
    method: str
    # A bundled dataset of the right format, so that the template launches as it is on the tiny demo model.
    suggested_dataset: str | None
    params: dict[str, Any] = field(default_factory=dict)
    start_from: int | None = None  # stage number (1 for the first); 0: the pipeline's model; None: the stage before
    reward_from: int | None = None


@dataclass(frozen=True)
class PipelineTemplate:
    name: str
    title: str
    description: str
    stages: tuple[StageTemplate, ...]


TEMPLATES: tuple[PipelineTemplate, ...] = (
    PipelineTemplate(
        name="rlhf",
        title="RLHF: SFT → reward model → GRPO",
        description="Supervised fine-tuning; then a reward model trained from the SFT weights on preference pairs; "
        "then online RL (GRPO) of the SFT model, each completion scored by that reward model",
        stages=(
            StageTemplate("SFT", "sft", "lora", "tiny-tasks"),
            StageTemplate("Reward model", "reward", "lora", "tiny-preferences", start_from=1),
            StageTemplate("GRPO", "grpo", "lora", "tiny-tasks", params={"reward_exact_match": 0.0},
                          start_from=1, reward_from=2),
        ),
    ),
    PipelineTemplate(
        name="sft-dpo",
        title="DPO after SFT",
        description="Supervised fine-tuning, then preference optimisation (DPO) of the SFT model, its reference",
        stages=(
            StageTemplate("SFT", "sft", "lora", "tiny-tasks"),
            StageTemplate("DPO", "dpo", "lora", "tiny-preferences"),
        ),
    ),
    PipelineTemplate(
        name="pretrain-sft",
        title="Continued pretraining → SFT",
        description="Continued pretraining on raw text of the domain, then supervised fine-tuning of that model",
        stages=(
            StageTemplate("Continued pretraining", "pretrain", "lora", "tiny-notes"),
            StageTemplate("SFT", "sft", "lora", "tiny-tasks"),
        ),
    ),
)
