from fastapi import APIRouter, Depends

from tunelab.api.deps import SettingsDep
from tunelab.api.policies import signed_in
from tunelab.core.errors import responses
from tunelab.schemas.queues import QueuePublic, QueuesPublic
from tunelab.services.runs import run_queues

router = APIRouter(tags=["queues"])


@router.get("/queues", response_model=QueuesPublic, dependencies=[Depends(signed_in)], responses=responses(401))
def read_queues(settings: SettingsDep) -> QueuesPublic:
    """The training queues a run may be sent to, in the declared order, each with the workers seen on it now. Any
    other queue is refused at launch (422 naming `queue`); the inference queue is never one of them."""
    declared = run_queues.list_queues(settings)
    return QueuesPublic(data=[QueuePublic(name=q.name, default=q.default, workers=q.workers) for q in declared],
                        count=len(declared))
