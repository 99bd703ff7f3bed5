from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base, UTCDateTime


class SigninFailures(Base):
    """Failed sign-ins of one client address or email within a window. Redis keeps these counters; this table
    keeps them only while Redis is unreachable, so sign-in goes on working with the same limits."""

    __tablename__ = "signin_failures"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)  # "addr:<address>" or "email:<email>"
    failures: Mapped[int] = mapped_column(Integer)
    window_ends_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
