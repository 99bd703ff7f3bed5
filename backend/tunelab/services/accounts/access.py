"""Authorization: what a principal may read or change. Every lookup by id and every list goes through here.

A project a caller is not a member of does not exist for them (404, never 403), so ids cannot be probed;
a member whose role is too low gets 403 naming the role it needs. A share link reads only its own runs.
"""

from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.db.models import Dataset, Pipeline, Project, ProjectMember, Role, Run, Study
from tunelab.db.models.project import DEFAULT_PROJECT
from tunelab.services.accounts.principal import Principal

READ_ONLY_LINK = "a share link gives read-only access"


def roles(session: Session, principal: Principal) -> dict[int, Role]:
    if principal.roles is None:
        if principal.user is None:
            principal.roles = {}
        else:
            rows = session.execute(select(ProjectMember.project_id, ProjectMember.role)
                                   .where(ProjectMember.user_id == principal.user.id))
            principal.roles = {project_id: role for project_id, role in rows}
    return principal.roles


def readable_project_ids(session: Session, principal: Principal) -> list[int]:
    return sorted(roles(session, principal))


def _project_missing(project_id: int) -> AppError:
    return AppError("PROJECT_NOT_FOUND", f"project {project_id} does not exist or you are not a member",
                    {"project_id": project_id})


def require_role(session: Session, principal: Principal, project_id: int, needed: Role, doing: str) -> Role:
    """The caller's role in the project, if it allows `doing`; 404 for non-members, 403 for too low a role."""
    if principal.share is not None and needed != Role.viewer:
        raise AppError("FORBIDDEN", f"{READ_ONLY_LINK}; {doing} needs a signed-in {needed.value}")
    role = roles(session, principal).get(project_id)
    if role is None:
        raise _project_missing(project_id)
    if not role.allows(needed):
        raise AppError("FORBIDDEN", f"{doing} needs the {needed.value} role in this project; yours is {role.value}",
                       {"needed": needed.value, "role": role.value})
    return role


def project(session: Session, principal: Principal, project_id: int, needed: Role = Role.viewer,
            doing: str = "this") -> Project:
    found = session.get(Project, project_id)
    if found is None:
        raise _project_missing(project_id)
    require_role(session, principal, project_id, needed, doing)
    return found


def project_for_new_work(session: Session, principal: Principal, project_id: int | None, doing: str) -> int:
    """The project a new run or dataset goes into: the one named; else, like MLflow's Default experiment, the
    `default` project when the caller can edit it; else the caller's only editable project."""
    if project_id is not None:
        project(session, principal, project_id, Role.editor, doing)
        return project_id
    editable = [pid for pid, role in roles(session, principal).items() if role.allows(Role.editor)]
    default_id = session.scalar(select(Project.id).where(Project.name == DEFAULT_PROJECT))
    if default_id in editable:
        return default_id
    if len(editable) == 1:
        return editable[0]
    message = ("project_id: you are an editor in no project; ask a project owner to add you"
               if not editable else "project_id: required, since you can edit more than one project")
    raise AppError("VALIDATION_ERROR", message, [{"field": "project_id", "message": message.split(": ", 1)[1]}])


def _run_missing(run_id: int) -> AppError:
    return AppError("RUN_NOT_FOUND", f"run {run_id} does not exist", {"run_id": run_id})


def run(session: Session, principal: Principal, run_id: int, needed: Role = Role.viewer, doing: str = "this",
        downloads: bool = False) -> Run:
    """A run the caller may read (needed=viewer) or change; a share link reaches only the runs it names."""
    if principal.share is not None:
        if run_id not in principal.share.run_ids:
            raise _run_missing(run_id)
        if needed != Role.viewer:
            raise AppError("FORBIDDEN", f"{READ_ONLY_LINK}; {doing} needs a signed-in {needed.value}")
        if downloads and not principal.share.allow_downloads:
            raise AppError("FORBIDDEN", "this share link was made without downloads")
    found = session.get(Run, run_id)
    if found is None:
        raise _run_missing(run_id)
    if principal.share is not None:
        if found.project_id != principal.share.project_id:
            raise _run_missing(run_id)
        return found
    if found.project_id not in roles(session, principal):
        raise _run_missing(run_id)
    require_role(session, principal, found.project_id, needed, doing)
    return found


def runs(session: Session, principal: Principal, run_ids: Sequence[int]) -> list[Run]:
    # One SELECT for all of them (a compare reads up to 100 runs); each check below then finds its run loaded.
    session.scalars(select(Run).where(Run.id.in_(set(run_ids)))).all()
    return [run(session, principal, run_id) for run_id in run_ids]


def dataset(session: Session, principal: Principal, dataset_id: int, needed: Role = Role.viewer,
            doing: str = "this") -> Dataset:
    """Bundled sample datasets are readable by every signed-in user; the rest by their project's members."""
    missing = AppError("DATASET_NOT_FOUND", f"dataset {dataset_id} does not exist", {"dataset_id": dataset_id})
    if principal.user is None:
        raise missing
    found = session.get(Dataset, dataset_id)
    if found is None:
        raise missing
    if found.bundled and needed == Role.viewer:
        return found
    if found.project_id not in roles(session, principal):
        raise missing
    require_role(session, principal, found.project_id, needed, doing)
    return found


Page = TypeVar("Page", Study, Pipeline)


def study(session: Session, principal: Principal, study_id: int, needed: Role = Role.viewer,
          doing: str = "this") -> Study:
    """A study the caller may read (needed=viewer) or change; a share link reaches only the study it shows."""
    missing = AppError("STUDY_NOT_FOUND", f"study {study_id} does not exist", {"study_id": study_id})
    shown = principal.share.study_id if principal.share is not None else None
    return _page(session, principal, Study, study_id, shown, missing, needed, doing)


def pipeline(session: Session, principal: Principal, pipeline_id: int, needed: Role = Role.viewer,
             doing: str = "this") -> Pipeline:
    """A pipeline the caller may read (needed=viewer) or change; a share link reaches only the pipeline it shows."""
    missing = AppError("PIPELINE_NOT_FOUND", f"pipeline {pipeline_id} does not exist", {"pipeline_id": pipeline_id})
    shown = principal.share.pipeline_id if principal.share is not None else None
    return _page(session, principal, Pipeline, pipeline_id, shown, missing, needed, doing)


def _page(session: Session, principal: Principal, kind: type[Page], page_id: int, shown: int | None,
          missing: AppError, needed: Role, doing: str) -> Page:
    """A study or a pipeline (a page of runs); `shown`: the page the caller's share link shows, if a link."""
    if principal.share is not None:
        if shown != page_id:
            raise missing
        if needed != Role.viewer:
            raise AppError("FORBIDDEN", f"{READ_ONLY_LINK}; {doing} needs a signed-in {needed.value}")
    found = session.get(kind, page_id)
    if found is None:
        raise missing
    if principal.share is not None:
        return found
    if found.project_id not in roles(session, principal):
        raise missing
    require_role(session, principal, found.project_id, needed, doing)
    return found
    if found.project_id not in roles(session, principal):
        raise missing
    require_role(session, principal, found.project_id, needed, doing)
    return found
