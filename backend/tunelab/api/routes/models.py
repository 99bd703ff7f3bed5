from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from tunelab.api.deps import SettingsDep
from tunelab.api.policies import signed_in
from tunelab.core.errors import responses
from tunelab.services.models import list_models

router = APIRouter(tags=["models"])


class ModelPublic(BaseModel):
    name: str
    title: str
    description: str
    source: str
    available: bool
    path: str | None
    how_to_get: str | None
    param_defaults: dict[str, dict[str, Any]] = Field(
        description="Per method name, the params this model sets over the method's own defaults (the launch form "
        "applies them when the model is chosen; POST /runs fills them in for params left out)",
    )


class ModelsPublic(BaseModel):
    data: list[ModelPublic]
    count: int


@router.get("/models", response_model=ModelsPublic, dependencies=[Depends(signed_in)], responses=responses(401))
def read_models(settings: SettingsDep) -> ModelsPublic:
    data = [
        ModelPublic(name=m.name, title=m.title, description=m.description, source=m.source, available=m.available,
                    path=str(m.path) if m.path else None,
                    how_to_get=None if m.available or not m.make_target else f"make {m.make_target}",
                    param_defaults=m.param_defaults)
        for m in list_models(settings)
    ]
    return ModelsPublic(data=data, count=len(data))
