"""Prefix tuning: trainable key/value vectors prepended at every attention layer."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.methods.prompt_learning import TINY_PROMPT_LEARNING_DEFAULTS, PromptLearningParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import PrefixTuningConfig


class PrefixParams(PromptLearningParams):
    prefix_projection: bool = Field(
        False,
        title="Prefix projection (MLP)",
        description="Produce the prefix through a two-layer MLP (more parameters, often more stable)",
    )
    encoder_hidden_size: int = Field(
        128, ge=1, le=65536, title="Encoder hidden size", description="Hidden size of that MLP, if used"
    )


def build_peft_config(params: PrefixParams, tokenizer_dir: str) -> "PrefixTuningConfig":
    from peft import PrefixTuningConfig, TaskType

    return PrefixTuningConfig(
        task_type=TaskType.CAUSAL_LM,
        num_virtual_tokens=params.num_virtual_tokens,
        prefix_projection=params.prefix_projection,
        encoder_hidden_size=params.encoder_hidden_size,
    )


register_method(
    MethodSpec(
        name="prefix",
        title="Prefix tuning",
        description="Freezes the model and learns key/value vectors prepended at every attention layer (~0.1 %).",
        params_model=PrefixParams,
        peft=True,
        build_peft_config=build_peft_config,
        tiny_model_defaults={"learning_rate": 1e-2, **TINY_PROMPT_LEARNING_DEFAULTS},
    )
)
