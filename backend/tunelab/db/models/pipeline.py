import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Enum, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class Pipeline(Base):
    """Runs that start from runs, launched together: each stage is queued when the one before it succeeds."""

    __tablename__ = "pipeline"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # What it was launched with (schemas.pipelines.PipelineSpec): clone starts from it.
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StageState(enum.StrEnum):
    waiting = "waiting"  # its run is not created yet: a stage before it has not succeeded
    launched = "launched"  # its run exists; the run's status is the stage's
    canceled = "canceled"  # never launched: a stage before it failed or was canceled, or the pipeline was
    failed = "failed"  # its run could not be launched (e.g. the weights it starts from were deleted)


class PipelineStage(Base):
    __tablename__ = "pipeline_stage"
    __table_args__ = (UniqueConstraint("pipeline_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    pipeline_id: Mapped[int] = mapped_column(ForeignKey("pipeline.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # 0 for the first stage
    state: Mapped[StageState] = mapped_column(
        Enum(StageState, native_enum=False, length=20, validate_strings=True), default=StageState.waiting)
    # Why a stage was canceled before it ran, or why its launch was refused.
    reason: Mapped[str | None] = mapped_column(Text)
    # Deleting the run keeps the stage (launched, with no run): the page says it was deleted.
    run_id: Mapped[int | None] = mapped_column(ForeignKey("run.id", ondelete="SET NULL"), index=True)
