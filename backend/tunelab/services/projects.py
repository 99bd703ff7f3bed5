"""Projects. Until teams land every run and dataset belongs to the one `default` project."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.db.models import Project
from tunelab.db.models.project import DEFAULT_PROJECT


def default_project_id(session: Session) -> int:
    project_id = session.scalar(select(Project.id).where(Project.name == DEFAULT_PROJECT))
    if project_id is None:
        raise AppError("PROJECT_NOT_FOUND", f"project {DEFAULT_PROJECT!r} does not exist: run `tunelab migrate`")
    return project_id
