from fastapi import APIRouter, Depends

from tunelab.api.deps import SettingsDep
from tunelab.api.policies import signed_in
from tunelab.core.errors import responses
from tunelab.schemas.models import ModelPublic, ModelsPublic
from tunelab.services.catalog.models import list_models

router = APIRouter(tags=["models"])


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
