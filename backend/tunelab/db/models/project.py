import enum
from datetime import datetime

from sqlalchemy import Enum, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow

DEFAULT_PROJECT = "default"


class Project(Base):
    __tablename__ = "project"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Role(enum.StrEnum):
    """Ordered: each role can do everything the ones before it can."""

    viewer = "viewer"
    editor = "editor"
    owner = "owner"

    @property
    def rank(self) -> int:
        return _ROLE_RANKS[self]

    def allows(self, needed: "Role") -> bool:
        return self.rank >= needed.rank


_ROLE_RANKS = {role: rank for rank, role in enumerate(Role)}  # looked up on every request: not a list built each time


class ProjectMember(Base):
    __tablename__ = "project_member"

    project_id: Mapped[int] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True,
                                         index=True)
    role: Mapped[Role] = mapped_column(Enum(Role, native_enum=False, length=20, validate_strings=True))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
