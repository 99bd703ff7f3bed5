"""GET /methods: every objective and method with its parameters' JSON Schema."""

from typing import Any

from pydantic import BaseModel, Field


class ObjectivePublic(BaseModel):
    name: str
    title: str
    description: str
    dataset_formats: list[str]
    metric_keys: list[str] = Field(description="Metrics this objective adds, as train/<key> and eval/<key>")
    is_default: bool = Field(description="The objective a run, study or estimate takes when none is given")
    reports_perplexity: bool
    learning_rate_scale: float = Field(
        description="The objective's learning rate relative to SFT's; a model's own learning-rate defaults (given "
        "for SFT) are scaled by it")
    next_stage: str | None = Field(
        description="The objective usually trained next on this one's weights (SFT after continued pretraining, DPO "
        "after SFT): what a run started from a run of this objective defaults to; null: the same objective")
    params_schema: dict[str, Any] = Field(description="The objective's own parameters (beside the method's)")
    scores_text: bool = Field(description="Its model scores text (a reward model, one output per sequence) instead of "
                              "generating: what an online RL run's reward_run_param names, and what cannot be prompted")
    reward_run_param: str | None = Field(
        description="The param naming the reward run whose model scores this objective's completions (online RL); a "
        "pipeline stage's reward_from sets it")
    defaults: dict[str, Any]
    method_defaults: dict[str, dict[str, Any]] = Field(
        description="By method: the method's defaults this objective changes (e.g. DPO's gentler learning rate)")


class MethodPublic(BaseModel):
    name: str
    title: str
    description: str
    objectives: list[str]
    peft: bool
    requires_cuda: bool = Field(description="Only on GPU queues (e.g. QLoRA's 4-bit quantization)")
    params_schema: dict[str, Any] = Field(description="The shared training parameters and the method's own")
    defaults: dict[str, Any]


class MethodsPublic(BaseModel):
    objectives: list[ObjectivePublic]
    methods: list[MethodPublic]
