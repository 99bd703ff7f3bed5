from sqlalchemy import BigInteger, Double, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base


class Metric(Base):
    """Append-only history; one row per (run, key, step). `seq` numbers the flush that wrote it (SSE event ids);
    MetricFlush finds a flush's rows."""

    __tablename__ = "metric"
    __table_args__ = ({"sqlite_with_rowid": False},)

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    value: Mapped[float] = mapped_column(Double)
    wall_time: Mapped[float] = mapped_column(Double)
    seq: Mapped[int] = mapped_column(Integer)


class MetricSummary(Base):
    """Latest/min/max per (run, key), kept current on every flush so lists and compare tables never scan history."""

    __tablename__ = "metric_summary"

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    last_step: Mapped[int] = mapped_column(BigInteger)
    last_value: Mapped[float] = mapped_column(Double)
    min_value: Mapped[float] = mapped_column(Double)
    max_value: Mapped[float] = mapped_column(Double)
    count: Mapped[int] = mapped_column(BigInteger)


class MetricRollup(Base):
    """Per (run, key) and cell of ROLLUP_WIDTH steps: the cell's last point, min, max and count, kept current at
    ingest, so that a long series is bucketed from 1/ROLLUP_WIDTH of its rows (services/downsample.py)."""

    __tablename__ = "metric_rollup"
    __table_args__ = ({"sqlite_with_rowid": False},)

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    cell: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    last_step: Mapped[int] = mapped_column(BigInteger)
    last_value: Mapped[float] = mapped_column(Double)
    last_wall_time: Mapped[float] = mapped_column(Double)
    min_value: Mapped[float] = mapped_column(Double)
    max_value: Mapped[float] = mapped_column(Double)
    count: Mapped[int] = mapped_column(Integer)


class MetricFlush(Base):
    """The replay index: per flush and key, the step range its points were stored in. A live view that missed the
    flushes after some seq reads their rows here and each one's primary-key range of `metric` (where `seq` matches):
    a row per key and flush instead of an index entry per point, which cost ~40 % of storing a point."""

    __tablename__ = "metric_flush"
    __table_args__ = ({"sqlite_with_rowid": False},)

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    first_step: Mapped[int] = mapped_column(BigInteger)
    last_step: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(Integer)  # points of the flush and key: a replay reads only what it sends
