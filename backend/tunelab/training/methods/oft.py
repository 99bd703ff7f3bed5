"""OFT: each chosen linear layer's input is rotated by a trainable block-diagonal orthogonal matrix (PEFT's OFTConfig,
OFTv2 with the Cayley-Neumann parameterisation)."""

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from tunelab.training.methods.lora import adaptable_layer_names
from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import OFTConfig


class OftParams(TrainingParams):
    learning_rate: float = Field(2e-4, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    oft_block_size: int = Field(
        32,
        ge=2,
        le=1024,
        title="Block size",
        description="Size of each orthogonal block: larger blocks rotate more dimensions together, with more "
        "parameters (about block size / 2 per input feature). It should divide each adapted layer's input size; "
        "PEFT takes the nearest size that does otherwise",
    )
    module_dropout: float = Field(
        0.0, ge=0, lt=1, title="Block dropout",
        description="Probability of setting each block to the identity for a training step (OFT's dropout)",
    )
    target_modules: list[str] | str = Field(
        "all-linear",
        title="Target modules",
        description='Module names to adapt (e.g. ["q_proj", "v_proj"]), or "all-linear" for every linear layer '
        "except the output head",
    )
    coft: bool = Field(
        False, title="Constrained OFT (COFT)",
        description="Keep each rotation within eps of the identity: a more conservative update",
    )
    eps: float = Field(
        6e-5, gt=0, le=1, title="COFT radius", description="How far COFT lets a rotation move (only with coft)"
    )

    @field_validator("target_modules")
    @classmethod
    def _one_name_is_a_list_of_it_and_a_pattern_compiles(cls, value: list[str] | str) -> list[str] | str:
        return adaptable_layer_names(value)


def build_peft_config(params: OftParams, tokenizer_dir: str) -> "OFTConfig":
    from peft import OFTConfig, TaskType

    return OFTConfig(
        task_type=TaskType.CAUSAL_LM,
        r=0,  # the number of blocks follows from the block size and each layer's input size
        oft_block_size=params.oft_block_size,
        module_dropout=params.module_dropout,
        target_modules=params.target_modules,
        coft=params.coft,
        eps=params.eps,
    )


register_method(
    MethodSpec(
        name="oft",
        title="OFT",
        description="Freezes the model and learns a block-diagonal rotation of the inputs of its linear layers "
        "(orthogonal fine-tuning): keeps the angles between a layer's neurons, so the base's knowledge is disturbed "
        "less (~0.1–1 % of the weights).",
        params_model=OftParams,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults={"learning_rate": 5e-3, "warmup_ratio": 0.0},
    )
)
