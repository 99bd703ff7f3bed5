from fastapi import APIRouter

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import UserDep
from tunelab.core.errors import responses
from tunelab.schemas.estimates import EstimateCreate, EstimatePublic
from tunelab.services.accounts import access
from tunelab.services.runs import estimates

router = APIRouter(tags=["estimates"])


# Any signed-in user may estimate (it reads no project's data but the median throughput of their own projects' runs).
@router.post("/estimates", response_model=EstimatePublic, responses=responses(401, 404, 422))
def create_estimate(body: EstimateCreate, session: SessionDep, settings: SettingsDep,
                    principal: UserDep) -> EstimatePublic:
    """Memory per device (DDP and ZeRO-1/2/3) and time of a run before it is launched, checked like POST /runs and
    compared with the devices of the queue's workers."""
    return estimates.estimate_run(session, settings, body, access.readable_project_ids(session, principal))
