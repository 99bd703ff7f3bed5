"""DoRA: LoRA whose update is split into a magnitude vector and a low-rank direction (PEFT's use_dora)."""

from typing import TYPE_CHECKING

from pydantic import model_validator

from tunelab.training.methods.lora import TINY_LORA_DEFAULTS, LoraParams, lora_config, loraplus_optimizer
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import LoraConfig


class DoraParams(LoraParams):
    """LoRA's settings; DoRA adds one trainable magnitude per output channel of each adapted layer."""

    @model_validator(mode="after")
    def _no_pissa(self) -> "DoraParams":
        # DoRA's magnitudes are the norms of the base's own columns, and PEFT's conversion of PiSSA to a plain LoRA
        # keeps the low-rank matrices only.
        if self.init_lora_weights == "pissa":
            raise ValueError("DoRA starts from the base's weights as they are: init_lora_weights pissa is for lora")
        return self


def build_peft_config(params: DoraParams, tokenizer_dir: str) -> "LoraConfig":
    return lora_config(params, use_dora=True)


register_method(
    MethodSpec(
        name="dora",
        title="DoRA",
        description="LoRA with the update split into magnitude and direction: often closer to full fine-tuning at "
        "low rank, slightly more parameters and slower steps than LoRA.",
        params_model=DoraParams,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults=TINY_LORA_DEFAULTS,
        build_optimizer=loraplus_optimizer,
    )
)
