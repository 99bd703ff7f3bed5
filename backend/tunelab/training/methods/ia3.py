"""IA3: trainable per-channel scaling vectors on keys, values and feed-forward activations."""

from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import IA3Config


class Ia3Params(TrainingParams):
    # PEFT's IA3 guide trains with 8e-3.
    learning_rate: float = Field(8e-3, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    target_modules: list[str] | None = Field(
        None,
        title="Target modules",
        description='Modules whose outputs are rescaled (e.g. ["k_proj", "v_proj", "down_proj"]); '
        "empty uses PEFT's default for the architecture",
    )
    feedforward_modules: list[str] | None = Field(
        None,
        title="Feed-forward modules",
        description="Those of target_modules that are feed-forward layers (scaled on their input); "
        "empty uses PEFT's default for the architecture",
    )

    @model_validator(mode="after")
    def _feedforward_within_targets(self) -> "Ia3Params":
        if self.feedforward_modules:
            if not self.target_modules:
                raise ValueError("feedforward_modules needs target_modules")
            if not set(self.feedforward_modules) <= set(self.target_modules):
                raise ValueError("feedforward_modules must be a subset of target_modules")
        return self


def build_peft_config(params: Ia3Params, tokenizer_dir: str) -> "IA3Config":
    from peft import IA3Config, TaskType

    return IA3Config(
        task_type=TaskType.CAUSAL_LM,
        target_modules=params.target_modules,
        feedforward_modules=params.feedforward_modules,
    )


register_method(
    MethodSpec(
        name="ia3",
        title="IA3",
        description="Freezes the model and learns scaling vectors on keys, values and feed-forward layers (~0.01 %).",
        params_model=Ia3Params,
        peft=True,
        build_peft_config=build_peft_config,
        mergeable=True,
        tiny_model_defaults={"learning_rate": 1e-2, "warmup_ratio": 0.0},
    )
)
