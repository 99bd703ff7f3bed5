"""Studies: runs of several methods (a grid, seeds) on one model and dataset with a matched budget."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from tunelab.api.deps import BrokerDep, SessionDep, SettingsDep
from tunelab.api.idempotency import REPLAYED_RESPONSE, IdempotencyKeyHeader, keyed, mark_replayed
from tunelab.api.policies import ReaderDep, StudyEditor, StudyReader, UserDep
from tunelab.core.errors import responses
from tunelab.schemas.common import ResourceId
from tunelab.schemas.shares import ShareCreated, StudyShareCreate
from tunelab.schemas.studies import (
    CostTablePublic,
    CostTableQuery,
    StudiesPublic,
    StudyClone,
    StudyCreate,
    StudyDetailPublic,
    StudyExtend,
)
from tunelab.services.accounts import access, shares
from tunelab.services.evaluation import studies
from tunelab.services.runs import idempotency

router = APIRouter(tags=["studies"])


@router.post("/studies", response_model=StudyDetailPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def create_study(body: StudyCreate, session: SessionDep, settings: SettingsDep, broker: BrokerDep, principal: UserDep,
                 request: Request, response: Response,
                 idempotency_key: IdempotencyKeyHeader = None) -> StudyDetailPublic:
    """Launch one run per method × grid cell × seed with the same budget. Every run's config is checked first: one
    bad combination is a 422 naming it, and nothing is created. With an Idempotency-Key, a retry gets this study
    back instead of a second one."""
    project_id = access.project_for_new_work(session, principal, body.project_id, "launching a study")
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: studies.create_study(session, settings, body, broker, project_id, principal.actor).id)
    mark_replayed(response, launched)
    return studies.read_study(session, studies.get_study(session, launched.resource_id))


@router.get("/studies", response_model=StudiesPublic, responses=responses(400, 401, 404, 422))
def read_studies(
    session: SessionDep,
    principal: UserDep,
    project_id: Annotated[ResourceId | None, Query(description="Only this project's studies; default: all of "
                                                               "yours")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
) -> StudiesPublic:
    if project_id is not None:
        access.project(session, principal, project_id)
        project_ids = [project_id]
    else:
        project_ids = access.readable_project_ids(session, principal)
    return studies.list_studies(session, project_ids, limit, cursor)


@router.get("/studies/{study_id}", response_model=StudyDetailPublic, responses=responses(401, 404))
def read_study(study: StudyReader, session: SessionDep, principal: ReaderDep) -> StudyDetailPublic:
    """The study, its runs and their cost table (computed here, so every viewer sees the same "best")."""
    return studies.read_study(session, study, show_creator=principal.share is None)


@router.post("/studies/{study_id}/runs", response_model=StudyDetailPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def extend_study(study: StudyEditor, body: StudyExtend, session: SessionDep, settings: SettingsDep,
                 broker: BrokerDep, principal: ReaderDep, request: Request, response: Response,
                 idempotency_key: IdempotencyKeyHeader = None) -> StudyDetailPublic:
    """More methods, grid values or seeds, trained with the study's budget; with an Idempotency-Key, a retry does
    not launch them twice."""

    def extend() -> int:
        studies.extend_study(session, settings, study, body, broker, principal.actor)
        return study.id

    mark_replayed(response, idempotency.launch_once(session, settings, keyed(principal, idempotency_key, request, body),
                                                    extend))
    return studies.read_study(session, study)


@router.post("/studies/{study_id}/clone", response_model=StudyDetailPublic, status_code=status.HTTP_201_CREATED,
             responses={**responses(401, 403, 404, 409, 422), **REPLAYED_RESPONSE})
def clone_study(study: StudyEditor, session: SessionDep, settings: SettingsDep, broker: BrokerDep,
                principal: ReaderDep, request: Request, response: Response, body: StudyClone | None = None,
                idempotency_key: IdempotencyKeyHeader = None) -> StudyDetailPublic:
    """A new study with the same spec, its runs launched anew; with an Idempotency-Key, a retry gets this clone back
    instead of a second one."""
    body = body or StudyClone()
    launched = idempotency.launch_once(
        session, settings, keyed(principal, idempotency_key, request, body),
        lambda: studies.clone_study(session, settings, study, body, broker, principal.actor).id)
    mark_replayed(response, launched)
    return studies.read_study(session, studies.get_study(session, launched.resource_id))


@router.delete("/studies/{study_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404, 409))
def delete_study(study: StudyEditor, session: SessionDep, settings: SettingsDep, principal: ReaderDep,
                 with_runs: Annotated[bool, Query(description="Delete the study's runs too, with their metrics and "
                                                  "artifacts (409 while one is queued or running)")] = False) -> None:
    """The study goes and its share links are revoked; its runs are kept (no longer in a study) unless with_runs."""
    studies.delete_study(session, settings, study, principal.actor, with_runs)


@router.post("/studies/{study_id}/shares", response_model=ShareCreated, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 422))
def create_study_share(study: StudyEditor, session: SessionDep, principal: ReaderDep,
                       body: StudyShareCreate | None = None) -> ShareCreated:
    """A read-only link to the study page (its runs, extensions included); the token is in this answer only."""
    body = body or StudyShareCreate()
    link, token = studies.create_share(session, principal.actor, study, body.title, body.expires_at,
                                       body.allow_downloads)
    return ShareCreated(**shares.to_public(session, link).model_dump(), url=f"/s/{token}", token=token)


@router.post("/cost-table", response_model=CostTablePublic, responses=responses(401, 404, 422))
def read_cost_table(body: CostTableQuery, session: SessionDep, principal: ReaderDep) -> CostTablePublic:
    """The fair cost table of any runs (the compare view): cells are method × the params that differ."""
    found = access.runs(session, principal, list(dict.fromkeys(body.run_ids)))
    return studies.runs_cost_table(session, found, target_loss=body.target_loss)
