from fastapi import APIRouter

from tunelab.api.policies import Public
from tunelab.schemas.common import DEFAULT_OBJECTIVE
from tunelab.schemas.methods import MethodPublic, MethodsPublic, ObjectivePublic
from tunelab.training import registry

router = APIRouter(tags=["methods"])


def _objective_public(objective: registry.ObjectiveSpec) -> ObjectivePublic:
    method_defaults = {}
    for method in registry.methods_for(objective.name):
        own = method.params_model().model_dump(mode="json")
        combined = registry.params_model(objective.name, method.name)().model_dump(mode="json")
        method_defaults[method.name] = {k: v for k, v in combined.items() if k in own and own[k] != v}
    return ObjectivePublic(name=objective.name, title=objective.title, description=objective.description,
                           dataset_formats=list(objective.dataset_formats), metric_keys=list(objective.metric_keys),
                           is_default=objective.name == DEFAULT_OBJECTIVE,
                           reports_perplexity=objective.reports_perplexity,
                           learning_rate_scale=objective.learning_rate_scale, next_stage=objective.next_stage,
                           params_schema=objective.params_model.model_json_schema(),
                           reward_run_param=objective.reward_run_param, scores_text=not objective.generates,
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
