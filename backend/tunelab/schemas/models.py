"""GET /models: the base models a run can start from."""

from typing import Any

from pydantic import BaseModel, Field


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
