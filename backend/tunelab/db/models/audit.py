from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class AuditEvent(Base):
    """Who did what to a project's runs, datasets, links and members. Append-only."""

    __tablename__ = "audit_event"
    __table_args__ = (Index("ix_audit_event_project_time", "project_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"))
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    # Kept as text so the log still reads right after the user is deleted.
    actor_label: Mapped[str] = mapped_column(String(320))
    action: Mapped[str] = mapped_column(String(50))  # "run.launch", "share.revoke", …
    target_type: Mapped[str] = mapped_column(String(30))
    target_id: Mapped[int | None]
    summary: Mapped[str] = mapped_column(String(500))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
