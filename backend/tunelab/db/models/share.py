from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class ShareLink(Base):
    """Read-only access to one run or one comparison for whoever holds the token; only its hash is kept."""

    __tablename__ = "share_link"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(20))  # "run" | "comparison" | "study" | "pipeline"
    run_ids: Mapped[list[int]] = mapped_column(JSON)
    # A study link shows the study page; run_ids are its runs (kept in step when the study is extended). Deleting the
    # study revokes its links first.
    study_id: Mapped[int | None] = mapped_column(ForeignKey("study.id", ondelete="SET NULL"))
    # A pipeline link shows the pipeline page; run_ids are its stages' runs, kept in step as stages are launched.
    pipeline_id: Mapped[int | None] = mapped_column(ForeignKey("pipeline.id", ondelete="SET NULL"))
    title: Mapped[str] = mapped_column(String(200))
    allow_downloads: Mapped[bool] = mapped_column(default=False)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    open_count: Mapped[int] = mapped_column(Integer, default=0)
