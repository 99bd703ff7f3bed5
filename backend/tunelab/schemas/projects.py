from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tunelab.db.models import Role

ProjectName = Field(min_length=1, max_length=100, pattern=r"\S", description="Unique across this Tunelab")


class ProjectCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = ProjectName


class ProjectUpdate(ProjectCreate):
    pass


class ProjectPublic(BaseModel):
    id: int
    name: str
    created_at: datetime
    role: Role = Field(description="Your role in this project")


class ProjectsPublic(BaseModel):
    data: list[ProjectPublic]
    count: int


class MemberCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(max_length=320, description="The account to add; an admin invites people without one")
    role: Role = Role.viewer


class MemberUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role


class MemberPublic(BaseModel):
    user_id: int
    email: str
    display_name: str
    role: Role
    invite_pending: bool
    added_at: datetime


class MembersPublic(BaseModel):
    data: list[MemberPublic]
    count: int


class AuditEventPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    actor_label: str
    action: str
    target_type: str
    target_id: int | None
    summary: str
    details: dict[str, Any]
    created_at: datetime


class AuditEventsPublic(BaseModel):
    data: list[AuditEventPublic]
    count: int
    next_before: int | None = Field(description="Pass as `before` for the next (older) page")
