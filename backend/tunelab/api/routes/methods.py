from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from tunelab.api.policies import Public
from tunelab.training import registry

router = APIRouter(tags=["methods"])


class ObjectivePublic(BaseModel):
    name: str
    title: str
    description: str
    dataset_formats: list[str]
    metric_keys: list[str] = Field(description="Metrics this objective adds, as train/<key> and eval/<key>")
    reports_perplexity: bool
    learning_rate_scale: float = Field(
        description="The objective's learning rate relative to SFT's; a model's own learning-rate defaults (given "
        "for SFT) are scaled by it")
    params_schema: dict[str, Any] = Field(description="The objective's own parameters (beside the method's)")
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


def _objective_public(objective: registry.ObjectiveSpec) -> ObjectivePublic:
    method_defaults = {}
    for method in registry.methods_for(objective.name):
        own = method.params_model().model_dump(mode="json")
        combined = registry.params_model(objective.name, method.name)().model_dump(mode="json")
        method_defaults[method.name] = {k: v for k, v in combined.items() if k in own and own[k] != v}
    return ObjectivePublic(name=objective.name, title=objective.title, description=objective.description,
                           dataset_formats=list(objective.dataset_formats), metric_keys=list(objective.metric_keys),
                           reports_perplexity=objective.reports_perplexity,
                           learning_rate_scale=objective.learning_rate_scale,
                           params_schema=objective.params_model.model_json_schema(),
                           defaults=objective.params_model().model_dump(mode="json"), method_defaults=method_defaults)


# Public: the registry is the same on every install, and shared pages label their runs' settings with it.
@router.get("/methods", response_model=MethodsPublic, dependencies=[Public])
def read_methods() -> MethodsPublic:
    """Every objective and method with its parameters' JSON Schema: the launch form is rendered from this. A run's
    params are the method's with the objective's beside them, defaults from the method, then the objective's."""
    objectives = [_objective_public(o) for o in registry.list_objectives()]
    methods = [
        MethodPublic(name=m.name, title=m.title, description=m.description,
                     objectives=[o.name for o in registry.list_objectives() if m.supports(o.name)], peft=m.peft,
                     requires_cuda=m.requires_cuda, params_schema=m.params_model.model_json_schema(),
                     defaults=m.params_model().model_dump(mode="json"))
        for m in registry.list_methods()
    ]
    return MethodsPublic(objectives=objectives, methods=methods)
