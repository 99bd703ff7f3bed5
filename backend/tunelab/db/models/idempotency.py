from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime, utcnow


class IdempotencyKey(Base):
    """An `Idempotency-Key` a caller sent with a launch, and what that launch created: a retry with the same key
    gets it back instead of a second one. Kept for idempotency_key_ttl_hours, then purged by the reaper."""

    __tablename__ = "idempotency_key"
    __table_args__ = (UniqueConstraint("user_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    endpoint: Mapped[str] = mapped_column(String(200))  # "POST /api/v1/runs/12/clone"
    request_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the endpoint and the validated body
    resource_id: Mapped[int] = mapped_column(Integer)  # the run or study the first request created
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
