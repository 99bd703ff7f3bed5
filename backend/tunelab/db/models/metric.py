from sqlalchemy import BigInteger, Double, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tunelab.db.base import Base


class MetricChunk(Base):
    """The metric history: per flush (`seq`, which numbers SSE events) and key, that flush's points of the key,
    packed in three little-endian arrays (int64 steps, ascending and distinct within the key's history; float64
    values and wall times). A row per key and flush instead of a row per point: storing a point costs packing
    24 bytes, not a row and its index entries (on PostgreSQL ~10 µs of backend CPU a point). Ingest keeps each
    (key, step) stored once (services/metrics); the primary key serves replay in flush order and
    ix_metric_chunk_key_steps every read of one key's steps."""

    __tablename__ = "metric_chunk"
    __table_args__ = (Index("ix_metric_chunk_key_steps", "run_id", "key", "last_step", "first_step"),)

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    first_step: Mapped[int] = mapped_column(BigInteger)
    last_step: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(Integer)
    step_bytes: Mapped[bytes] = mapped_column(LargeBinary)
    value_bytes: Mapped[bytes] = mapped_column(LargeBinary)
    wall_time_bytes: Mapped[bytes] = mapped_column(LargeBinary)


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
    ingest, so that a long series is bucketed from 1/ROLLUP_WIDTH of its points (services/metrics/downsample.py)."""

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
