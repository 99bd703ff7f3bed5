"""Projects, their members and roles, their audit log and their share links."""

from typing import Annotated

from fastapi import APIRouter, Query, status

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import ProjectEditor, ProjectOwner, ProjectViewer, UserDep
from tunelab.core.errors import responses
from tunelab.schemas.common import ResourceId
from tunelab.schemas.projects import (
    AuditEventPublic,
    AuditEventsPublic,
    MemberCreate,
    MemberPublic,
    MembersPublic,
    MemberUpdate,
    ProjectCreate,
    ProjectPublic,
    ProjectsPublic,
    ProjectUpdate,
)
from tunelab.schemas.shares import SharesPublic
from tunelab.services.accounts import access, audit, projects, shares

router = APIRouter(tags=["projects"])


def _public(project, role) -> ProjectPublic:
    return ProjectPublic(id=project.id, name=project.name, created_at=project.created_at, role=role)


def _member_public(member, user) -> MemberPublic:
    return MemberPublic(user_id=user.id, email=user.email, display_name=user.display_name, role=member.role,
                        invite_pending=user.invite_pending, added_at=member.created_at)


@router.get("/projects", response_model=ProjectsPublic, responses=responses(401))
def read_projects(principal: UserDep, session: SessionDep) -> ProjectsPublic:
    """The projects you are a member of, with your role in each."""
    data = [_public(p, role) for p, role in projects.list_projects(session, principal)]
    return ProjectsPublic(data=data, count=len(data))


@router.post("/projects", response_model=ProjectPublic, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 409, 422))
def create_project(body: ProjectCreate, principal: UserDep, session: SessionDep) -> ProjectPublic:
    """Any signed-in user may start a project; they become its owner."""
    project = projects.create_project(session, principal, body.name)
    return _public(project, access.roles(session, principal)[project.id])


@router.get("/projects/{project_id}", response_model=ProjectPublic, responses=responses(401, 404))
def read_project(project: ProjectViewer, principal: UserDep, session: SessionDep) -> ProjectPublic:
    return _public(project, access.roles(session, principal)[project.id])


@router.patch("/projects/{project_id}", response_model=ProjectPublic, responses=responses(401, 403, 404, 409, 422))
def update_project(body: ProjectUpdate, project: ProjectOwner, principal: UserDep,
                   session: SessionDep) -> ProjectPublic:
    return _public(projects.rename_project(session, principal, project, body.name), access.roles(session, principal)[project.id])


@router.delete("/projects/{project_id}", status_code=status.HTTP_204_NO_CONTENT,
               responses=responses(401, 403, 404, 409))
def delete_project(project: ProjectOwner, session: SessionDep, settings: SettingsDep) -> None:
    """Deletes the project's runs, artifacts and datasets; refused while any of its runs is queued or running."""
    projects.delete_project(session, settings, project)


@router.get("/projects/{project_id}/members", response_model=MembersPublic, responses=responses(401, 404))
def read_members(project: ProjectViewer, session: SessionDep) -> MembersPublic:
    data = [_member_public(m, u) for m, u in projects.list_members(session, project.id)]
    return MembersPublic(data=data, count=len(data))


@router.post("/projects/{project_id}/members", response_model=MemberPublic, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 409, 422))
def add_member(body: MemberCreate, project: ProjectOwner, principal: UserDep, session: SessionDep) -> MemberPublic:
    return _member_public(*projects.add_member(session, principal, project.id, body.email, body.role))


@router.patch("/projects/{project_id}/members/{user_id}", response_model=MemberPublic,
              responses=responses(401, 403, 404, 409, 422))
def update_member(user_id: ResourceId, body: MemberUpdate, project: ProjectOwner, principal: UserDep,
                  session: SessionDep) -> MemberPublic:
    return _member_public(*projects.change_role(session, principal, project.id, user_id, body.role))


@router.delete("/projects/{project_id}/members/{user_id}", status_code=status.HTTP_204_NO_CONTENT,
               responses=responses(401, 403, 404, 409))
def remove_member(user_id: ResourceId, project: ProjectOwner, principal: UserDep, session: SessionDep) -> None:
    projects.remove_member(session, principal, project.id, user_id)


@router.get("/projects/{project_id}/audit", response_model=AuditEventsPublic, responses=responses(401, 403, 404))
def read_audit_log(
    project: ProjectOwner,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[ResourceId | None, Query(description="next_before of the previous page")] = None,
) -> AuditEventsPublic:
    """Newest first: who launched, canceled, deleted, shared, revoked and changed members, and when."""
    found, count = audit.list_events(session, project.id, limit, before)
    next_before = found[-1].id if len(found) == limit else None
    return AuditEventsPublic(data=[AuditEventPublic.model_validate(e) for e in found], count=count,
                             next_before=next_before)


@router.get("/projects/{project_id}/shares", response_model=SharesPublic, responses=responses(401, 403, 404))
def read_project_shares(
    project: ProjectEditor,
    session: SessionDep,
    include_inactive: Annotated[bool, Query(description="Also revoked and expired links")] = False,
) -> SharesPublic:
    found = shares.list_shares(session, project.id, include_inactive)
    return SharesPublic(data=[shares.to_public(session, link) for link in found], count=len(found))
