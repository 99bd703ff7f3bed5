import enum
from datetime import datetime

from sqlalchemy import Enum, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class ExportStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"


class RunExport(Base):
    """One request for a merged model of a run (base + adapter, merged into `merged/` of its artifacts by a worker)."""

    __tablename__ = "run_export"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    status: Mapped[ExportStatus] = mapped_column(
        Enum(ExportStatus, native_enum=False, length=20, validate_strings=True), default=ExportStatus.queued
    )
    status_reason: Mapped[str | None] = mapped_column(Text)
    requested_by: Mapped[str] = mapped_column(String(320))  # the actor's label, as the audit log keeps it
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    worker: Mapped[str | None] = mapped_column(String(200))
    # Stamped while it merges: a running export whose heartbeat stops lost its worker.
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
