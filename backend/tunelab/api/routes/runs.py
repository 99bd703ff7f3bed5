from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, status
from fastapi.responses import FileResponse, StreamingResponse

from tunelab.api.deps import DispatcherDep, SessionDep, SettingsDep
from tunelab.core.errors import responses
from tunelab.db.models import RunStatus
from tunelab.schemas.runs import (
    ArtifactPublic,
    ArtifactsPublic,
    RunClone,
    RunCreate,
    RunLogPublic,
    RunPublic,
    RunSortField,
    RunsPublic,
)
from tunelab.services import artifacts, live, run_logs, runs

router = APIRouter(tags=["runs"])


@router.post("/runs", response_model=RunPublic, status_code=status.HTTP_201_CREATED, responses=responses(404, 422))
def create_run(body: RunCreate, session: SessionDep, settings: SettingsDep, dispatch: DispatcherDep) -> RunPublic:
    run = runs.create_run(session, settings, body, dispatch)
    return runs.to_public(session, run)


@router.get("/runs", response_model=RunsPublic, responses=responses(400, 422))
def read_runs(
    session: SessionDep,
    status: Annotated[list[RunStatus] | None, Query()] = None,
    method: str | None = None,
    objective: str | None = None,
    model: str | None = None,
    q: Annotated[str | None, Query(description="Text found in the name, model or method")] = None,
    ids: Annotated[list[int] | None, Query(max_length=200, description="Only these runs (the compare view)")] = None,
    sort: RunSortField = "queued_at",
    order: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
) -> RunsPublic:
    return runs.list_runs(session, status=status, method=method, objective=objective, model=model, q=q, sort=sort,
                          order=order, limit=limit, cursor=cursor, ids=ids)


@router.get("/runs/{run_id}", response_model=RunPublic, responses=responses(404))
def read_run(run_id: int, session: SessionDep) -> RunPublic:
    return runs.to_public(session, runs.get_run(session, run_id))


@router.post("/runs/{run_id}/cancel", response_model=RunPublic, responses=responses(404, 409))
def cancel_run(run_id: int, session: SessionDep) -> RunPublic:
    return runs.to_public(session, runs.request_cancel(session, run_id))


@router.post("/runs/{run_id}/clone", response_model=RunPublic, status_code=status.HTTP_201_CREATED,
             responses=responses(404, 422))
def clone_run(run_id: int, session: SessionDep, settings: SettingsDep, dispatch: DispatcherDep,
              body: RunClone | None = None) -> RunPublic:
    run = runs.clone_run(session, settings, run_id, body or RunClone(), dispatch)
    return runs.to_public(session, run)


@router.delete("/runs/{run_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404, 409))
def delete_run(run_id: int, session: SessionDep, settings: SettingsDep) -> None:
    runs.delete_run(session, settings, run_id)


@router.get("/runs/{run_id}/events", responses={**responses(404), 200: {"content": {"text/event-stream": {}}}})
def read_run_events(
    run_id: int,
    session: SessionDep,
    last_event_id: Annotated[int | None, Header(description="Resume after this event id")] = None,
    after: Annotated[int | None, Query(ge=0, description="Same as Last-Event-ID, for clients that cannot set it")] = None,
) -> StreamingResponse:
    """Server-Sent Events: `metrics` (id = flush number), `status`, and a final `end`."""
    runs.get_run(session, run_id)
    resume_after = last_event_id if last_event_id is not None else (after or 0)
    return StreamingResponse(live.run_events(run_id, resume_after), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/runs/{run_id}/logs", response_model=RunLogPublic, responses=responses(404))
def read_run_logs(
    run_id: int,
    session: SessionDep,
    settings: SettingsDep,
    offset: Annotated[int | None, Query(ge=0, description="Byte offset to read from; omit for the tail")] = None,
    tail_bytes: Annotated[int, Query(ge=1, le=1024 * 1024)] = 64 * 1024,
) -> RunLogPublic:
    runs.get_run(session, run_id)
    return run_logs.read_log(settings, run_id, offset, tail_bytes)


@router.get("/runs/{run_id}/artifacts", response_model=ArtifactsPublic, responses=responses(404))
def read_run_artifacts(run_id: int, session: SessionDep) -> ArtifactsPublic:
    runs.get_run(session, run_id)
    found = artifacts.list_artifacts(session, run_id)
    data = [
        ArtifactPublic(path=a.path, kind=a.kind, size_bytes=a.size_bytes, created_at=a.created_at,
                       download_url=f"/api/v1/runs/{run_id}/artifacts/{a.path}")
        for a in found
    ]
    return ArtifactsPublic(data=data, count=len(data))


@router.get("/runs/{run_id}/artifacts/{path:path}", response_class=FileResponse,
            responses={**responses(400, 404), 200: {"content": {"application/octet-stream": {}}}})
def download_run_artifact(run_id: int, path: str, session: SessionDep, settings: SettingsDep) -> FileResponse:
    runs.get_run(session, run_id)
    file = artifacts.artifact_file(session, settings, run_id, path)
    return FileResponse(file, filename=file.name, media_type="application/octet-stream")
