"""Projects and their members. Every run and dataset belongs to one; data from before teams is in `default`."""

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.models import Dataset, Project, ProjectMember, Role, Run, User
from tunelab.db.models.project import DEFAULT_PROJECT
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.services.accounts import access, audit
from tunelab.services.accounts.auth import normalize_email
from tunelab.services.accounts.principal import Principal


def default_project_id(session: Session) -> int:
    project_id = session.scalar(select(Project.id).where(Project.name == DEFAULT_PROJECT))
    if project_id is None:
        raise AppError("PROJECT_NOT_FOUND", f"project {DEFAULT_PROJECT!r} does not exist: run `tunelab migrate`")
    return project_id


def list_projects(session: Session, principal: Principal) -> list[tuple[Project, Role]]:
    my_roles = access.roles(session, principal)
    found = session.scalars(select(Project).where(Project.id.in_(list(my_roles))).order_by(Project.name))
    return [(project, my_roles[project.id]) for project in found]


def _name_taken(name: str) -> AppError:
    return AppError("PROJECT_NAME_TAKEN", f"name: a project named {name!r} already exists", {"field": "name"})


def create_project(session: Session, principal: Principal, name: str) -> Project:
    name = name.strip()
    if session.scalar(select(Project.id).where(func.lower(Project.name) == name.lower())) is not None:
        raise _name_taken(name)
    project = Project(name=name)
    session.add(project)
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise _name_taken(name) from None
    session.add(ProjectMember(project_id=project.id, user_id=principal.signed_in_user.id, role=Role.owner))
    principal.roles = None
    audit.record(session, project.id, principal.actor, "project.create", "project", project.id,
                 f"{principal.actor.label} created project {name!r}")
    return project


def rename_project(session: Session, principal: Principal, project: Project, name: str) -> Project:
    name = name.strip()
    if name.lower() != project.name.lower() and session.scalar(
            select(Project.id).where(func.lower(Project.name) == name.lower())) is not None:
        raise _name_taken(name)
    if name == project.name:
        return project
    old, project.name = project.name, name
    audit.record(session, project.id, principal.actor, "project.rename", "project", project.id,
                 f"{principal.actor.label} renamed the project from {old!r} to {name!r}")
    return project


def delete_project(session: Session, settings: Settings, project: Project) -> None:
    """Deletes the project's runs (with their artifacts) and datasets; refused while a run is active."""
    from tunelab.services.catalog import datasets
    from tunelab.services.runs import runs

    active = session.scalar(select(func.count(Run.id)).where(Run.project_id == project.id,
                                                             Run.status.not_in(FINISHED_STATUSES)))
    if active:
        raise AppError("RUN_NOT_FINISHED", f"{active} run(s) of this project are queued or running; cancel them first",
                       {"active_runs": active})
    if session.scalar(select(func.count(Dataset.id)).where(Dataset.project_id == project.id, Dataset.bundled)):
        raise AppError("PROJECT_HOLDS_SAMPLES", "this project holds the bundled sample datasets that every user reads "
                       "(it is the default project); it cannot be deleted")
    # Newest first: a run that another started from goes after it.
    for run_id in session.scalars(select(Run.id).where(Run.project_id == project.id).order_by(Run.id.desc())):
        runs.delete_run(session, settings, run_id)
    for dataset in session.scalars(select(Dataset).where(Dataset.project_id == project.id, ~Dataset.bundled)):
        datasets.delete_dataset(session, settings, dataset)
    session.delete(project)


# Members ----------------------------------------------------------------------------------------------------------

def list_members(session: Session, project_id: int) -> list[tuple[ProjectMember, User]]:
    stmt = (select(ProjectMember, User).join(User, User.id == ProjectMember.user_id)
            .where(ProjectMember.project_id == project_id).order_by(User.email))
    return [(member, user) for member, user in session.execute(stmt)]


def _member(session: Session, project_id: int, user_id: int) -> ProjectMember:
    member = session.get(ProjectMember, (project_id, user_id))
    if member is None:
        raise AppError("MEMBER_NOT_FOUND", f"user {user_id} is not a member of this project", {"user_id": user_id})
    return member


def _keep_an_owner(session: Session, project_id: int, member: ProjectMember) -> None:
    owners = session.scalar(select(func.count()).where(ProjectMember.project_id == project_id,
                                                       ProjectMember.role == Role.owner)) or 0
    if member.role == Role.owner and owners <= 1:
        raise AppError("LAST_OWNER", "a project needs at least one owner; make someone else owner first")


def add_member(session: Session, principal: Principal, project_id: int, email: str, role: Role) -> tuple[ProjectMember, User]:
    user = session.scalar(select(User).where(User.email == normalize_email(email)))
    if user is None:
        raise AppError("USER_NOT_FOUND", f"email: no account uses {normalize_email(email)}; an admin can invite them",
                       {"field": "email"})
    if session.get(ProjectMember, (project_id, user.id)) is not None:
        raise AppError("ALREADY_MEMBER", f"email: {user.email} is already a member", {"field": "email"})
    member = ProjectMember(project_id=project_id, user_id=user.id, role=role)
    session.add(member)
    session.flush()  # fills created_at, which the answer shows
    audit.record(session, project_id, principal.actor, "member.add", "user", user.id,
                 f"{principal.actor.label} added {user.email} as {role.value}", role=role.value)
    return member, user


def change_role(session: Session, principal: Principal, project_id: int, user_id: int, role: Role) -> tuple[ProjectMember, User]:
    member = _member(session, project_id, user_id)
    if role != Role.owner:
        _keep_an_owner(session, project_id, member)
    old, member.role = member.role, role
    user = session.get_one(User, user_id)
    audit.record(session, project_id, principal.actor, "member.role", "user", user_id,
                 f"{principal.actor.label} changed {user.email} from {old.value} to {role.value}",
                 old=old.value, new=role.value)
    return member, user


def remove_member(session: Session, principal: Principal, project_id: int, user_id: int) -> None:
    member = _member(session, project_id, user_id)
    _keep_an_owner(session, project_id, member)
    user = session.get_one(User, user_id)
    session.delete(member)
    audit.record(session, project_id, principal.actor, "member.remove", "user", user_id,
                 f"{principal.actor.label} removed {user.email}")
