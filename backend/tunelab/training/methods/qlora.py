"""QLoRA: LoRA on a base model quantized to 4-bit NormalFloat (bitsandbytes, double quantization, bf16 compute).
Needs a CUDA GPU."""

from typing import TYPE_CHECKING, Any

from pydantic import model_validator

from tunelab.training.methods.lora import TINY_LORA_DEFAULTS, LoraParams, lora_config, loraplus_optimizer
from tunelab.training.registry import MethodSpec, ModelLoading, register_method

if TYPE_CHECKING:
    from peft import LoraConfig


class QloraParams(LoraParams):
    """LoRA's settings; the frozen base is stored in 4 bits (≈0.5 byte per weight) and computed in bf16."""

    @model_validator(mode="after")
    def _no_pissa(self) -> "QloraParams":
        # PEFT factorises a weight in 16 or 32 bits only: a 4-bit one would have to be dequantized and quantized again.
        if self.init_lora_weights == "pissa":
            raise ValueError("PiSSA factorises full-precision weights, and QLoRA's base is 4-bit: use "
                             "init_lora_weights default, or lora")
        return self


def build_peft_config(params: QloraParams, tokenizer_dir: str) -> "LoraConfig":
    return lora_config(params)


def model_loading(method: MethodSpec, params: Any) -> ModelLoading:
    return ModelLoading(dtype="bfloat16", quantization="nf4")


register_method(
    MethodSpec(
        name="qlora",
        title="QLoRA",
        description="LoRA on a 4-bit (NF4) quantized base: about a quarter of LoRA's weight memory. CUDA GPUs only.",
        params_model=QloraParams,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults=TINY_LORA_DEFAULTS,
        model_loading=model_loading,
        requires_cuda=True,
        build_optimizer=loraplus_optimizer,
    )
)
