"""Prompt tuning: trainable soft embeddings prepended to the input only."""

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from tunelab.training.methods.prompt_learning import TINY_PROMPT_LEARNING_DEFAULTS, PromptLearningParams
from tunelab.training.registry import MethodSpec, register_method

if TYPE_CHECKING:
    from peft import PromptTuningConfig


class PromptParams(PromptLearningParams):
    prompt_tuning_init: Literal["random", "text"] = Field(
        "random",
        title="Prompt initialisation",
        description="Start the soft tokens at random, or at the embeddings of prompt_tuning_init_text",
    )
    prompt_tuning_init_text: str | None = Field(
        None,
        title="Initialisation text",
        description='Text whose token embeddings initialise the soft prompt (with prompt_tuning_init="text")',
    )

    @model_validator(mode="after")
    def _init_text_given(self) -> "PromptParams":
        if self.prompt_tuning_init == "text" and not self.prompt_tuning_init_text:
            raise ValueError('prompt_tuning_init="text" needs prompt_tuning_init_text')
        return self


def build_peft_config(params: PromptParams, tokenizer_dir: str) -> "PromptTuningConfig":
    from peft import PromptTuningConfig, PromptTuningInit, TaskType

    return PromptTuningConfig(
        task_type=TaskType.CAUSAL_LM,
        num_virtual_tokens=params.num_virtual_tokens,
        prompt_tuning_init=PromptTuningInit.TEXT if params.prompt_tuning_init == "text" else PromptTuningInit.RANDOM,
        prompt_tuning_init_text=params.prompt_tuning_init_text,
        tokenizer_name_or_path=tokenizer_dir,  # read only for text initialisation
    )


register_method(
    MethodSpec(
        name="prompt",
        title="Prompt tuning",
        description="Freezes the model and learns soft token embeddings prepended to the input (< 0.01 %).",
        params_model=PromptParams,
        peft=True,
        build_peft_config=build_peft_config,
        prepends_virtual_tokens=True,
        tiny_model_defaults={"learning_rate": 3e-2, **TINY_PROMPT_LEARNING_DEFAULTS},
    )
)
