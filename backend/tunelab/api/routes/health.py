from fastapi import APIRouter, Request, Response
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from tunelab import __version__
from tunelab.api.deps import SessionDep
from tunelab.api.policies import Public, caller_or_anonymous
from tunelab.core.redis import get_responsive_redis
from tunelab.schemas.health import HealthPublic, WorkerPublic
from tunelab.services.runs.workers import WorkerPresence, list_workers

router = APIRouter(tags=["health"])

UNAVAILABLE = "unavailable"


def _first_line(exc: Exception) -> str:
    return f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


# Public, for load balancers and uptime checks; it names workers and queues, never data. Errors name hosts and
# ports, so only an admin sees them, and with the database down nobody can be verified as one.
@router.get("/health", response_model=HealthPublic, dependencies=[Public],
            responses={503: {"model": HealthPublic, "description": "The database or Redis is down"}})
def read_health(request: Request, response: Response, session: SessionDep) -> HealthPublic:
    database = redis_state = "ok"
    workers: list[WorkerPresence] = []
    try:
        session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        session.rollback()
        database = _first_line(exc)
    try:
        get_responsive_redis().ping()
        workers = list_workers()
    except Exception as exc:  # noqa: BLE001  (health reports every failure of Redis instead of raising)
        redis_state = _first_line(exc)
    ok = database == "ok" and redis_state == "ok"
    if not ok:
        response.status_code = 503
        principal = caller_or_anonymous(request, session) if database == "ok" else None
        if principal is None or principal.user is None or not principal.user.is_admin:
            database, redis_state = (UNAVAILABLE if state != "ok" else state for state in (database, redis_state))
    return HealthPublic(status="ok" if ok else "degraded", version=__version__, database=database,
                        redis=redis_state, workers=[WorkerPublic(**w) for w in workers])
