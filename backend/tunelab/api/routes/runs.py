from collections.abc import Iterator
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Header, Query, Request, Response, status
from fastapi.responses import FileResponse, RedirectResponse, StreamingResponse
from pydantic import StringConstraints

from tunelab.api.deps import BrokerDep, SessionDep, SettingsDep
from tunelab.api.idempotency import REPLAYED_RESPONSE, IdempotencyKeyHeader, keyed, mark_replayed
from tunelab.api.policies import (
    ReaderDep,
    RunCanceler,
    RunCloner,
    RunDeleter,
    RunDownloader,
    RunEditor,
    RunLogger,
    RunReader,
    RunResumer,
    UserDep,
)
from tunelab.core.errors import AppError, responses
from tunelab.core.store import get_store
from tunelab.db.models import RunStatus
from tunelab.schemas.common import MAX_ID, ResourceId
from tunelab.schemas.runs import (
    ArtifactArchivePublic,
    ArtifactPublic,
    ArtifactsPublic,
    MetricKeysPublic,
    RunClone,
    RunCreate,
    RunFinish,
    RunLineagePublic,
    RunLogPublic,
    RunPublic,
    RunsBulkAction,
    RunsBulkPublic,
    RunSortField,
    RunsPublic,
    RunUpdate,
)
from tunelab.services.accounts import access
from tunelab.services.live import live
from tunelab.services.runs import (
    artifacts,
    external_runs,
    idempotency,
    pipelines,
    run_edits,
    run_filters,
    run_logs,
    runs,
    table_exports,
)

router = APIRouter(tags=["runs"])


@router.post("/runs", response_model=RunPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def create_run(body: RunCreate, session: SessionDep, settings: SettingsDep, broker: BrokerDep, principal: UserDep,
               request: Request, response: Response, idempotency_key: IdempotencyKeyHeader = None) -> RunPublic:
    """Queue a run. It is sent to a worker once committed; with the broker (Redis) down it stays queued and is sent
    as soon as the broker is back. With an Idempotency-Key, a retry gets this run back instead of a second one."""
    project_id = access.project_for_new_work(session, principal, body.project_id, "launching a run")
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: runs.create_run(session, settings, body, broker, project_id, principal.actor).id)
    mark_replayed(response, launched)
    return runs.to_public(session, runs.get_run(session, launched.resource_id))


def _run_query(
    session: SessionDep,
    principal: ReaderDep,
    project_id: Annotated[ResourceId | None, Query(description="Only this project's runs; default: all of yours")] = None,
    status: Annotated[list[RunStatus] | None, Query()] = None,
    method: str | None = None,
    objective: str | None = None,
    model: str | None = None,
    q: Annotated[str | None, Query(description="Text found in the name, model or method")] = None,
    ids: Annotated[list[ResourceId] | None, Query(max_length=200, description="Only these runs (the compare view)")] = None,
    tag: Annotated[list[str] | None, Query(max_length=20, description="Runs having every one of these tags")] = None,
    param: Annotated[list[str] | None, Query(max_length=20, description=(
        "A condition on the resolved config's params: `r:16` or `r=16` (equal), `learning_rate>0.0001`; "
        "operators : = < <= > >=; repeat for all of several"))] = None,
    metric: Annotated[list[str] | None, Query(max_length=20, description=(
        "A condition on the run's metric summary: `eval/loss<2` (latest value), `min(eval/loss)<=1.5`, "
        "`max(train/grad_norm)>10`, or a run figure such as `best_eval_loss<2`; operators < <= > >= ="))] = None,
) -> runs.RunQuery | None:
    """The runs the caller asks for and may read; None when a share link's runs leave nothing to find."""
    filters = run_filters.parse_filters(tag, param, metric)
    if principal.share is not None:
        # A link lists its own runs only; asking for others finds nothing (not "no filter").
        project_ids, ids = [principal.share.project_id], [i for i in (ids or principal.share.run_ids)
                                                          if i in principal.share.run_ids]
        if not ids:
            return None
    elif project_id is not None:
        access.project(session, principal, project_id)
        project_ids = [project_id]
    else:
        project_ids = access.readable_project_ids(session, principal)
    return runs.RunQuery(project_ids=project_ids, status=status, method=method, objective=objective, model=model, q=q,
                         ids=ids, filters=filters)


RunQueryDep = Annotated[runs.RunQuery | None, Depends(_run_query)]


@router.get("/runs", response_model=RunsPublic, responses=responses(400, 401, 404, 422))
def read_runs(
    session: SessionDep,
    query: RunQueryDep,
    sort: RunSortField = "queued_at",
    order: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
    metric_column: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] | None, Query(
        max_length=20, description="A logged metric key to answer in each run's metric_columns (last, min, max); "
        "repeat for several (GET /metric-keys lists them)")] = None,
) -> RunsPublic:
    if query is None:
        return RunsPublic(data=[], count=0, next_cursor=None)
    return runs.list_runs(session, project_ids=query.project_ids, status=query.status, method=query.method,
                          objective=query.objective, model=query.model, q=query.q, sort=sort, order=order,
                          limit=limit, cursor=cursor, ids=query.ids, filters=query.filters,
                          metric_columns=metric_column or ())


@router.get("/metric-keys", response_model=MetricKeysPublic, responses=responses(401, 404, 422))
def read_metric_keys(query: RunQueryDep, session: SessionDep) -> MetricKeysPublic:
    """The metric keys logged by the runs GET /runs would list with the same filters: the columns a runs table can
    add."""
    return MetricKeysPublic(data=runs.logged_metric_keys(session, query) if query is not None else [])


ExportFormatQuery = Annotated[table_exports.ExportFormat, Query(alias="format", description="csv or json")]


def download(chunks: Iterator[str], export_format: str, filename: str) -> StreamingResponse:
    """A streamed CSV or JSON attachment."""
    media_type = "text/csv" if export_format == "csv" else "application/json"
    return StreamingResponse(chunks, media_type=f"{media_type}; charset=utf-8",
                             headers={"Content-Disposition": f'attachment; filename="{filename}.{export_format}"'})


@router.get("/runs/export", response_class=StreamingResponse,
            responses={**responses(400, 401, 404, 422),
                       200: {"content": {"text/csv": {}, "application/json": {}}}})
def export_runs(query: RunQueryDep, export_format: ExportFormatQuery = "csv") -> StreamingResponse:
    """Every run GET /runs would list with the same filters (all of them, not one page): id, name, status, method,
    objective, model, dataset, tags (comma-joined in CSV), seed, key params (and those filtered on), summary figures."""
    chunks = table_exports.export_runs(query or runs.RunQuery(project_ids=[]), export_format)
    return download(chunks, export_format, "runs")


@router.post("/runs/bulk", response_model=RunsBulkPublic, responses=responses(401, 403, 404, 409, 422))
def bulk_update_runs(body: RunsBulkAction, session: SessionDep, settings: SettingsDep,
                     principal: ReaderDep) -> RunsBulkPublic:
    """Tag, untag, delete or cancel many runs: all of them, or none when any one is not yours to change (403/404)
    or cannot take the action (409: delete needs finished runs, cancel unfinished ones)."""
    changed = run_edits.apply_bulk(session, settings, body, principal)
    return RunsBulkPublic(action=body.action, count=len(set(body.run_ids)), data=runs.to_public_many(session, changed))


@router.get("/runs/{run_id}", response_model=RunPublic, responses=responses(401, 404))
def read_run(run: RunReader, session: SessionDep) -> RunPublic:
    return runs.to_public(session, run)


@router.patch("/runs/{run_id}", response_model=RunPublic, responses=responses(401, 403, 404, 422))
def update_run(run: RunEditor, body: RunUpdate, session: SessionDep, principal: ReaderDep) -> RunPublic:
    """Rename a run, set its notes, or replace its tags; fields left out stay as they are."""
    return runs.to_public(session, run_edits.update_run(session, run, body, principal))


@router.post("/runs/{run_id}/cancel", response_model=RunPublic, responses=responses(401, 403, 404, 409))
def cancel_run(
    run: RunCanceler,
    session: SessionDep,
    settings: SettingsDep,
    principal: ReaderDep,
    force: Annotated[bool, Query(description="Kill the training process now instead of stopping at the next step "
                                             "(for a run stuck inside a step); it keeps its last checkpoint")] = False,
) -> RunPublic:
    """Stop a run: a queued one never starts; a running one stops at its next step, saves a checkpoint (resumable)
    and is `canceled` within seconds. A pipeline's stage canceled while queued cancels the stages after it now."""
    canceled = runs.request_cancel(session, run.id, principal.actor, force=force)
    if canceled.status.finished:
        pipelines.advance_after_run(session, settings, canceled.id, None)
    return runs.to_public(session, canceled)


@router.post("/runs/{run_id}/finish", response_model=RunPublic, responses=responses(401, 403, 404, 409, 422))
def finish_run(run: RunLogger, body: RunFinish, session: SessionDep, principal: ReaderDep) -> RunPublic:
    """End an external run as `succeeded` or `failed` (with the reason), as its training script saw it: 409 for a run
    Tunelab trains or one already finished. Its wall time, eval losses and tokens/s come from its logged points."""
    return runs.to_public(session, external_runs.finish_external_run(session, run, body, principal.actor))


@router.post("/runs/{run_id}/resume", response_model=RunPublic, responses=responses(401, 403, 404, 409, 422))
def resume_run(run: RunResumer, session: SessionDep, settings: SettingsDep, broker: BrokerDep,
               principal: ReaderDep) -> RunPublic:
    """Queue a failed or canceled run again; it continues from its newest checkpoint (`checkpoint_step`), or from
    the start when it saved none. It stays the same run: metrics and artifacts carry on. A run whose queue the
    server no longer declares is refused (422): clone it onto a declared queue."""
    return runs.to_public(session, runs.request_resume(session, settings, run.id, broker, principal.actor))


@router.post("/runs/{run_id}/clone", response_model=RunPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def clone_run(run: RunCloner, session: SessionDep, settings: SettingsDep, broker: BrokerDep, principal: ReaderDep,
              request: Request, response: Response, body: RunClone | None = None,
              idempotency_key: IdempotencyKeyHeader = None) -> RunPublic:
    """Queue a copy of the run, params overridden by the body's; with an Idempotency-Key, a retry gets this copy
    back instead of a second one."""
    body = body or RunClone()
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: runs.clone_run(session, settings, run, body, broker, principal.actor).id)
    mark_replayed(response, launched)
    return runs.to_public(session, runs.get_run(session, launched.resource_id))


@router.delete("/runs/{run_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404, 409))
def delete_run(run: RunDeleter, session: SessionDep, settings: SettingsDep, principal: ReaderDep) -> None:
    runs.delete_run(session, settings, run.id, principal.actor)


@router.get("/runs/{run_id}/events",
            responses={**responses(401, 404), 200: {"content": {"text/event-stream": {}}}})
async def read_run_events(
    run: RunReader,
    principal: ReaderDep,
    request: Request,
    last_event_id: Annotated[int | None, Header(ge=0, le=MAX_ID, description="Resume after this event id")] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_ID, description="Same as Last-Event-ID, for clients that cannot "
                                                                     "set it")] = None,
) -> StreamingResponse:
    """Server-Sent Events: `metrics` (id = flush number), `status`, and a final `end` (or `revoked`, when the share
    link the stream was opened with stops being valid). When the API shuts down, the stream ends with a short
    `retry:` so that the browser reconnects to the next process at once."""
    resume_after = last_event_id if last_event_id is not None else (after or 0)
    link_id = principal.share.id if principal.share is not None else None
    stream = live.run_events(request.app.state.live_hub, run.id, resume_after, link_id)
    return StreamingResponse(stream, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/runs/{run_id}/logs", response_model=RunLogPublic, responses=responses(401, 403, 404))
def read_run_logs(
    run: RunDownloader,
    settings: SettingsDep,
    offset: Annotated[int | None, Query(ge=0, description="Byte offset to read from; omit for the tail")] = None,
    tail_bytes: Annotated[int, Query(ge=1, le=1024 * 1024)] = 64 * 1024,
) -> RunLogPublic:
    return run_logs.read_log(settings, run.id, offset, tail_bytes)


@router.get("/runs/{run_id}/artifacts", response_model=ArtifactsPublic, responses=responses(401, 403, 404))
def read_run_artifacts(run: RunDownloader, session: SessionDep) -> ArtifactsPublic:
    found = artifacts.list_artifacts(session, run.id)
    data = [
        ArtifactPublic(path=a.path, kind=a.kind, size_bytes=a.size_bytes, created_at=a.created_at,
                       download_url=f"/api/v1/runs/{run.id}/artifacts/{a.path}")
        for a in found
    ]
    archives = [ArtifactArchivePublic(folder=folder, download_url=archive_url(run.id, folder))
                for folder in artifacts.archive_folders(session, run.id)]
    return ArtifactsPublic(data=data, count=len(data), archives=archives)


def archive_url(run_id: int, folder: str) -> str:
    return f"/api/v1/runs/{run_id}/archives/{folder}.zip"


@router.get("/runs/{run_id}/archives/{folder}.zip", response_class=StreamingResponse,
            responses={**responses(401, 403, 404, 422), 200: {"content": {"application/zip": {}}}})
def download_run_archive(run: RunDownloader, folder: artifacts.ArchiveFolder, session: SessionDep,
                         settings: SettingsDep) -> StreamingResponse:
    """One artifact folder as a zip, streamed from the store: `adapter` (with the run's tokenizer: unpacked, it is
    what `PeftModel.from_pretrained` loads on the base its config names by model id), `model` (full fine-tuning) or
    `merged` (an export), which `AutoModelForCausalLM.from_pretrained` loads."""
    members = artifacts.archive_members(session, run.id, folder)
    store = get_store(settings)
    if store.size(members[0][1].key) is None:  # asked before the answer starts: a store away is a 503, not a cut zip
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run.id}'s {folder}/ is no longer stored", {"path": folder})
    return StreamingResponse(artifacts.stream_zip(store, members), media_type="application/zip",
                             headers={"Content-Disposition": f'attachment; filename="run-{run.id}-{folder}.zip"'})


@router.get("/runs/{run_id}/artifacts/{path:path}", response_class=FileResponse,
            responses={**responses(400, 401, 403, 404, 503), 200: {"content": {"application/octet-stream": {}}},
                       307: {"description": "Redirect to a presigned URL of the store (TUNELAB_PRESIGNED_DOWNLOADS)"}})
def download_run_artifact(run: RunDownloader, path: str, session: SessionDep, settings: SettingsDep) -> Response:
    """One file of the run: from the local store's folder, streamed from an S3 store, or (TUNELAB_PRESIGNED_DOWNLOADS)
    a redirect to a short-lived presigned URL of it."""
    file = artifacts.artifact_file(session, run.id, path)
    store = get_store(settings)
    local = store.local_path(file.key)
    if local is not None:
        if not local.is_file():
            raise AppError("ARTIFACT_NOT_FOUND", f"run {run.id} has no artifact {path!r}", {"path": path})
        return FileResponse(local, filename=file.name, media_type="application/octet-stream")
    url = store.download_url(file.key, file.name)
    if url is not None:
        return RedirectResponse(url, status_code=307)
    size = store.size(file.key)
    if size is None:
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run.id} has no artifact {path!r}", {"path": path})
    return StreamingResponse(store.read_chunks(file.key), media_type="application/octet-stream", headers={
        "Content-Length": str(size), "Content-Disposition": f"attachment; filename*=UTF-8''{quote(file.name)}"})


@router.get("/runs/{run_id}/lineage", response_model=RunLineagePublic, responses=responses(401, 404))
def read_run_lineage(run: RunReader, session: SessionDep, principal: ReaderDep) -> RunLineagePublic:
    """The runs whose weights this run builds on (nearest first: `base_run` at launch) and the runs that started from
    it; through a share link, only the runs it shares. Runs another run started from are not deleted (409
    RUN_IN_USE) until that run is."""
    shared = set(principal.share.run_ids) if principal.share is not None else None
    return runs.lineage(session, run, shared)
