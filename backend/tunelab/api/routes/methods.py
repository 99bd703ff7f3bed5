from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from tunelab.api.policies import Public
from tunelab.training import registry

router = APIRouter(tags=["methods"])


class ObjectivePublic(BaseModel):
    name: str
    title: str
    description: str
    dataset_formats: list[str]


class MethodPublic(BaseModel):
    name: str
    title: str
    description: str
    objectives: list[str]
    peft: bool
    params_schema: dict[str, Any]
    defaults: dict[str, Any]


class MethodsPublic(BaseModel):
    objectives: list[ObjectivePublic]
    methods: list[MethodPublic]


# Public: the registry is the same on every install, and shared pages label their runs' settings with it.
@router.get("/methods", response_model=MethodsPublic, dependencies=[Public])
def read_methods() -> MethodsPublic:
    """Every objective and method with its parameters' JSON Schema: the launch form is rendered from this."""
    objectives = [ObjectivePublic(name=o.name, title=o.title, description=o.description,
                                  dataset_formats=list(o.dataset_formats)) for o in registry.list_objectives()]
    methods = [
        MethodPublic(name=m.name, title=m.title, description=m.description, objectives=list(m.objectives),
                     peft=m.peft, params_schema=m.params_model.model_json_schema(),
                     defaults=m.params_model().model_dump(mode="json"))
        for m in registry.list_methods()
    ]
    return MethodsPublic(objectives=objectives, methods=methods)
