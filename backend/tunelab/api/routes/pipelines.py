"""Pipelines: runs that start from runs (SFT → reward model → GRPO, …), launched together from a template or a spec;
each stage is queued when the one before it succeeds."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from tunelab.api.deps import BrokerDep, SessionDep, SettingsDep
from tunelab.api.idempotency import REPLAYED_RESPONSE, IdempotencyKeyHeader, keyed, mark_replayed
from tunelab.api.policies import PipelineEditor, PipelineReader, ReaderDep, UserDep
from tunelab.core.errors import responses
from tunelab.schemas.common import ResourceId
from tunelab.schemas.pipelines import (
    PipelineClone,
    PipelineCreate,
    PipelineDetailPublic,
    PipelinesPublic,
    PipelineTemplatesPublic,
)
from tunelab.schemas.shares import ShareCreated, StudyShareCreate
from tunelab.services.accounts import access, shares
from tunelab.services.runs import idempotency, pipelines

router = APIRouter(tags=["pipelines"])


@router.get("/pipeline-templates", response_model=PipelineTemplatesPublic, responses=responses(401))
def read_pipeline_templates(principal: UserDep) -> PipelineTemplatesPublic:
    """The chains the launch form offers (RLHF, DPO after SFT, pretrain → SFT): each stage's objective, method, the
    dataset formats it takes and the template's params, all editable."""
    return pipelines.templates()


@router.post("/pipelines", response_model=PipelineDetailPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def create_pipeline(body: PipelineCreate, session: SessionDep, settings: SettingsDep, broker: BrokerDep,
                    principal: UserDep, request: Request, response: Response,
                    idempotency_key: IdempotencyKeyHeader = None) -> PipelineDetailPublic:
    """Check every stage (as POST /runs checks a run, the stages it depends on as they will be), then queue the first;
    each next stage is queued when the one before it succeeds, and a failed or canceled stage cancels the rest. One
    bad stage is a 422 naming it (stages.N.field), and nothing is created. With an Idempotency-Key, a retry gets this
    pipeline back instead of a second one."""
    project_id = access.project_for_new_work(session, principal, body.project_id, "launching a pipeline")
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: pipelines.create_pipeline(session, settings, body, broker, project_id, principal.actor).id)
    mark_replayed(response, launched)
    return pipelines.read_pipeline(session, pipelines.get_pipeline(session, launched.resource_id))


@router.get("/pipelines", response_model=PipelinesPublic, responses=responses(400, 401, 404, 422))
def read_pipelines(
    session: SessionDep,
    principal: UserDep,
    project_id: Annotated[ResourceId | None, Query(description="Only this project's pipelines; default: all of "
                                                               "yours")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
) -> PipelinesPublic:
    if project_id is not None:
        access.project(session, principal, project_id)
        project_ids = [project_id]
    else:
        project_ids = access.readable_project_ids(session, principal)
    return pipelines.list_pipelines(session, project_ids, limit, cursor)


@router.get("/pipelines/{pipeline_id}", response_model=PipelineDetailPublic, responses=responses(401, 404))
def read_pipeline(pipeline: PipelineReader, session: SessionDep, principal: ReaderDep) -> PipelineDetailPublic:
    """The pipeline and its stages in order: each one's status (waiting until the stage before it succeeds), the
    reason a stage was canceled, and its run once launched."""
    return pipelines.read_pipeline(session, pipeline, show_creator=principal.share is None)


@router.post("/pipelines/{pipeline_id}/cancel", response_model=PipelineDetailPublic, responses=responses(401, 403,
                                                                                                            404, 409))
def cancel_pipeline(pipeline: PipelineEditor, session: SessionDep, settings: SettingsDep,
                    principal: ReaderDep) -> PipelineDetailPublic:
    """Cancel the stage queued or running (it stops at its next step, saving what it has) and every stage after it;
    409 when no stage is left to run."""
    pipelines.cancel_pipeline(session, settings, pipeline, principal.actor)
    return pipelines.read_pipeline(session, pipeline)


@router.post("/pipelines/{pipeline_id}/clone", response_model=PipelineDetailPublic,
             status_code=status.HTTP_201_CREATED, responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def clone_pipeline(pipeline: PipelineEditor, session: SessionDep, settings: SettingsDep, broker: BrokerDep,
                   principal: ReaderDep, request: Request, response: Response, body: PipelineClone | None = None,
                   idempotency_key: IdempotencyKeyHeader = None) -> PipelineDetailPublic:
    """A new pipeline with the same stages, launched anew from its first."""
    body = body or PipelineClone()
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: pipelines.clone_pipeline(session, settings, pipeline, body, broker, principal.actor).id)
    mark_replayed(response, launched)
    return pipelines.read_pipeline(session, pipelines.get_pipeline(session, launched.resource_id))


@router.delete("/pipelines/{pipeline_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404))
def delete_pipeline(pipeline: PipelineEditor, session: SessionDep, principal: ReaderDep) -> None:
    """The pipeline goes with its stages not yet launched, and its share links are revoked; its runs are kept (a
    stage still running finishes as a run of its own)."""
    pipelines.delete_pipeline(session, pipeline, principal.actor)


@router.post("/pipelines/{pipeline_id}/shares", response_model=ShareCreated, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 422))
def create_pipeline_share(pipeline: PipelineEditor, session: SessionDep, principal: ReaderDep,
                          body: StudyShareCreate | None = None) -> ShareCreated:
    """A read-only link to the pipeline page (every stage's run, those launched later too); the token is in this
    answer only."""
    body = body or StudyShareCreate()
    link, token = pipelines.create_share(session, principal.actor, pipeline, body.title, body.expires_at,
                                         body.allow_downloads)
    return ShareCreated(**shares.to_public(session, link).model_dump(), url=f"/s/{token}", token=token)
