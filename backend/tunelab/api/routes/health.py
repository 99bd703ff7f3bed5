from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text

from tunelab import __version__
from tunelab.api.deps import SessionDep
from tunelab.api.policies import Public
from tunelab.core.redis import get_redis
from tunelab.services.workers import list_workers

router = APIRouter(tags=["health"])


class WorkerPublic(BaseModel):
    name: str
    queues: list[str]
    seen_at: float


class HealthPublic(BaseModel):
    status: str
    version: str
    database: str
    redis: str
    workers: list[WorkerPublic]


# Public, for load balancers and uptime checks; it names workers and queues, never data.
@router.get("/health", response_model=HealthPublic, dependencies=[Public])
def read_health(session: SessionDep) -> HealthPublic:
    database = redis_state = "ok"
    workers: list[dict] = []
    try:
        session.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001  (health reports every failure instead of raising)
        database = f"error: {exc}"
    try:
        get_redis().ping()
        workers = list_workers()
    except Exception as exc:  # noqa: BLE001
        redis_state = f"error: {exc}"
    ok = database == "ok" and redis_state == "ok"
    return HealthPublic(status="ok" if ok else "degraded", version=__version__, database=database,
                        redis=redis_state, workers=[WorkerPublic(**w) for w in workers])
