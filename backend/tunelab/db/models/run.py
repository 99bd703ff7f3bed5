import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Double, Enum, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class RunStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    canceled = "canceled"

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATUSES


FINISHED_STATUSES = frozenset({RunStatus.succeeded, RunStatus.failed, RunStatus.canceled})


class Run(Base):
    __tablename__ = "run"
    __table_args__ = (Index("ix_run_status_queue", "status", "queue"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("project.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    objective: Mapped[str] = mapped_column(String(30))
    method: Mapped[str] = mapped_column(String(30))
    model: Mapped[str] = mapped_column(String(500))
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("dataset.id", ondelete="SET NULL"), index=True)
    dataset_hash: Mapped[str | None] = mapped_column(String(64))
    # The full resolved config (defaults filled in): what reproduces the run.
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(Integer)
    queue: Mapped[str] = mapped_column(String(50))
    external: Mapped[bool] = mapped_column(default=False)
    # The study it was launched in; deleting the study keeps the run.
    study_id: Mapped[int | None] = mapped_column(ForeignKey("study.id", ondelete="SET NULL"), index=True)
    # The run whose trained weights this one started from (its lineage); a run others start from is not deleted.
    base_run_id: Mapped[int | None] = mapped_column(ForeignKey("run.id", ondelete="SET NULL"), index=True)
    notes: Mapped[str | None] = mapped_column(Text)

    status: Mapped[RunStatus] = mapped_column(
        Enum(RunStatus, native_enum=False, length=20, validate_strings=True), default=RunStatus.queued
    )
    status_reason: Mapped[str | None] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    # Cancel did not stop it: the worker kills the training process.
    force_stop_requested: Mapped[bool] = mapped_column(default=False)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    worker: Mapped[str | None] = mapped_column(String(200))
    # Which start of training this is (1 = the first); each resume after a lost worker or by a user adds one.
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # Resumes the reaper made on its own since the last start a user asked for; bounded by max_auto_resumes.
    auto_resumes: Mapped[int] = mapped_column(Integer, default=0)
    # The one queue message of a queued run: when it was sent, its id, and the broker epoch it was sent in.
    # A new epoch (Redis restarted empty) or a message no longer in the broker is the only reason to send again.
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    dispatch_id: Mapped[str | None] = mapped_column(String(64))
    dispatch_epoch: Mapped[str | None] = mapped_column(String(64))
    # Step of the newest checkpoint on disk: what a resume starts from.
    checkpoint_step: Mapped[int | None] = mapped_column(Integer)
    # The step this attempt started from (its checkpoint's), so the ETA counts only this attempt's steps.
    start_step: Mapped[int] = mapped_column(Integer, default=0)
    versions: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)

    current_step: Mapped[int] = mapped_column(Integer, default=0)
    total_steps: Mapped[int | None] = mapped_column(Integer)
    progress_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # What the running attempt is doing (a training.sink.RunPhase: loading the model, evaluating, saving…).
    phase: Mapped[str | None] = mapped_column(String(20))
    # Number of the last metrics flush; SSE event ids are these sequence numbers.
    metric_seq: Mapped[int] = mapped_column(Integer, default=0)

    trainable_params: Mapped[int | None] = mapped_column(BigInteger)
    total_params: Mapped[int | None] = mapped_column(BigInteger)
    peak_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    wall_time_s: Mapped[float | None] = mapped_column(Double)
    tokens_per_second: Mapped[float | None] = mapped_column(Double)
    final_eval_loss: Mapped[float | None] = mapped_column(Double)
    best_eval_loss: Mapped[float | None] = mapped_column(Double)
    # The summary's other figures, shown on the run page but never filtered or sorted on: the model state's bytes by
    # part, CUDA and RSS peaks, truncation counts (training.sink.RunSummary names them).
    summary_details: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    @property
    def trainable_percent(self) -> float | None:
        if not self.trainable_params or not self.total_params:
            return None
        return 100.0 * self.trainable_params / self.total_params


class RunTag(Base):
    """One tag of a run. A table, not a JSON column: the run list filters on tags."""

    __tablename__ = "run_tag"

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(50), primary_key=True, index=True)
