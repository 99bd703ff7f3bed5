"""LoRA: a trainable low-rank update B·A beside chosen frozen linear layers."""

import re
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import LoraConfig


PLAIN_NAME = re.compile(r"[\w.]+")  # a module name, or a dotted path to one
# The tiny model learns its tasks at a learning rate far above a real model's, from the first step, without dropout.
TINY_LORA_DEFAULTS = {"learning_rate": 5e-3, "lora_dropout": 0.0, "warmup_ratio": 0.0}


class LoraParams(TrainingParams):
    learning_rate: float = Field(2e-4, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    r: int = Field(8, ge=1, le=1024, title="Rank (r)", description="Rank of the update matrices")
    lora_alpha: int = Field(
        16, ge=1, le=4096, title="LoRA alpha", description="Scale of the update: it is multiplied by lora_alpha / r"
    )
    lora_dropout: float = Field(0.05, ge=0, lt=1, title="LoRA dropout", description="Dropout on the adapter's input")
    target_modules: list[str] | str = Field(
        "all-linear",
        title="Target modules",
        description='Module names to adapt (e.g. ["q_proj", "v_proj"]), or "all-linear" for every linear layer '
        "except the output head",
    )

    @field_validator("target_modules")
    @classmethod
    def _one_name_is_a_list_of_it_and_a_pattern_compiles(cls, value: list[str] | str) -> list[str] | str:
        # PEFT reads a single string as a regular expression the layer's whole dotted name must match, so "q_proj"
        # alone (what the launch form sends for one name) matches no layer and the run fails at load. As a list it
        # matches every layer of that name, and still any a regex of name characters and dots would have matched.
        if isinstance(value, str) and value != "all-linear":
            if PLAIN_NAME.fullmatch(value):
                return [value]
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"a single string is a regular expression over the layers' names, and this one is "
                                 f"not valid: {exc}") from None
        return value


def lora_config(params: LoraParams, use_dora: bool = False) -> "LoraConfig":
    """The PEFT LoraConfig of LoRA and of the methods built on it (DoRA, QLoRA)."""
    from peft import LoraConfig, TaskType

    return LoraConfig(
        task_type=TaskType.CAUSAL_LM,
        r=params.r,
        lora_alpha=params.lora_alpha,
        lora_dropout=params.lora_dropout,
        target_modules=params.target_modules,
        use_dora=use_dora,
    )


def build_peft_config(params: LoraParams, tokenizer_dir: str) -> "LoraConfig":
    return lora_config(params)


register_method(
    MethodSpec(
        name="lora",
        title="LoRA",
        description="Freezes the model and learns a low-rank update on its linear layers (~0.1–1 % of the weights).",
        params_model=LoraParams,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults=TINY_LORA_DEFAULTS,
    )
)
