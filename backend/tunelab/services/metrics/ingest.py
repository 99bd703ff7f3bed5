"""Storing a batch of points: for Tunelab's own runs (the worker, through an ORM session) and for external runs (the
route and the fast path, on a driver connection)."""

import json
import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import get_settings
from tunelab.services.live.events import publish_metrics_after_commit
from tunelab.services.metrics.batches import Cell, cells_of, new_chunks, rollup_rows, summarize, summary_rows
from tunelab.services.metrics.driver import Driver
from tunelab.services.metrics.records import (
    EVAL_LOSS_KEY,
    KeySummary,
    MetricPoint,
    chunk_table,
    rollup_table,
    summary_table,
)
from tunelab.services.runs import run_refs
from tunelab.services.runs.run_refs import RunRef

log = logging.getLogger(__name__)


def ingest_points(session: Session, run_id: int, points: Sequence[MetricPoint], *,
                  remembered: RunRef | None = None) -> int:
    """Store a batch of (key, step, value, wall_time) under a new flush number and return it; the caller commits,
    and live views hear of the flush once it has."""
    seq = store_points(Driver.of(session.connection()), run_id, points, remembered=remembered)
    publish_metrics_after_commit(session, run_id, seq)
    return seq


def store_points(driver: Driver, run_id: int, points: Sequence[MetricPoint], *,
                 remembered: RunRef | None = None) -> int:
    """ingest_points on a driver connection (the metrics fast path has no ORM session): the caller commits, then
    calls events.publish_metrics_now.

    Idempotent on (run_id, key, step): a retried batch stores nothing twice and leaves the summaries unchanged.
    With `remembered` (services/runs/run_refs), the run must still be in that project and external, else RUN_NOT_FOUND.
    """
    if driver.dialect == "postgresql" and get_settings().metrics_durability == "relaxed":
        # Only when asked: a database crash may then lose the last fraction of a second of acknowledged points
        # (never corrupt anything), for ~10 % more ingest measured. By default a batch commits as the server does.
        driver.execute("no_wal_wait", {}).close()
    # Bumping the run's counter first also takes the run's row lock (PostgreSQL) or the write lock (SQLite), so
    # concurrent flushes of one run get distinct numbers and the summary read-modify-write below cannot interleave.
    if remembered is None:
        cursor = driver.execute("bump_seq", {"the_run_id": run_id})
    else:
        cursor = driver.execute("bump_seq_guarded", {"the_run_id": run_id, "the_project_id": remembered.project_id,
                                                     "the_external": remembered.external})
    row = cursor.fetchone()
    cursor.close()
    if row is None:
        if remembered is not None:
            run_refs.forget(run_id)  # gone, or its id given to another run: the next request reads it again
        raise AppError("RUN_NOT_FOUND", f"run {run_id} does not exist", {"run_id": run_id})
    if driver.dialect == "postgresql":
        # Read in a statement of its own: the bump's snapshot was taken before it waited for the row lock, so it
        # cannot see what a flush of the same run that held the lock stored (e.g. the first try of a retry).
        cursor = driver.execute("stored_last_steps", {"the_run_id": run_id})
        row = (row[0], cursor.fetchone()[0])
        cursor.close()
    seq, last_steps = row  # last_steps: JSON text from SQLite, already decoded by psycopg, None for no key yet
    stored_last_steps = (json.loads(last_steps) if isinstance(last_steps, str) else last_steps) or {}

    chunks = new_chunks(driver, run_id, storable_points(driver, points), stored_last_steps)
    if chunks:
        driver.insert_rows("insert_chunks", chunk_table, [chunk.row() for chunk in chunks], run_id=run_id, seq=seq)
        cells = cells_of(chunks)
        _merge_summaries(driver, run_id, summarize(cells))
        _merge_rollups(driver, run_id, cells)
    return seq


def ingest_external_points(session: Session, run: RunRef, points: Sequence[MetricPoint]) -> int:
    """Points logged from outside Tunelab, accepted only into an external run: a run Tunelab trains has one writer,
    its worker, so a point posted from elsewhere cannot overwrite or pre-empt what training logs."""
    require_external(run)
    return ingest_points(session, run.id, points, remembered=run)


def commit_external_points(driver: Driver, run: RunRef, points: Sequence[MetricPoint]) -> int:
    """ingest_external_points on a driver connection with no transaction open, in a transaction of its own,
    committed before it returns (the metrics fast path's); the caller then calls events.publish_metrics_now."""
    require_external(run)
    seq = store_points(driver, run.id, points, remembered=run)
    driver.connection.commit()
    return seq


def require_external(run: RunRef) -> None:
    if not run.external:
        raise AppError(
            "RUN_NOT_EXTERNAL",
            f"run {run.id} is trained by Tunelab, which logs its metrics itself; only a run created with "
            '"external": true accepts metrics from outside',
            {"run_id": run.id},
        )


def storable_points(driver: Driver, points: Sequence[MetricPoint]) -> list[MetricPoint]:
    if driver.dialect != "sqlite":
        return list(points)
    # SQLite turns NaN into NULL, which the NOT NULL value column refuses; +-inf are stored faithfully. Dropping the
    # NaN points keeps a diverging run's flushes (and the rest of its metrics) flowing. (NaN is the only value
    # unequal to itself: the cheapest test on the hot path.)
    storable = [point for point in points if point[2] == point[2]]
    if len(storable) < len(points):
        log.warning("SQLite cannot store NaN: dropped %d metric points", len(points) - len(storable))
    return storable


def _merge_summaries(driver: Driver, run_id: int, batch: dict[str, KeySummary]) -> None:
    """One statement for the batch; the run row lock taken by the seq bump keeps concurrent merges apart."""
    driver.insert_rows("upsert_summaries", summary_table, summary_rows(batch), run_id=run_id)
    if EVAL_LOSS_KEY in batch:
        driver.execute("copy_eval_loss", {"the_run_id": run_id}).close()


def _merge_rollups(driver: Driver, run_id: int, cells: dict[tuple[str, int], Cell]) -> None:
    """Fold the batch's cells into the stored rollups: one statement for the batch."""
    driver.insert_rows("upsert_rollups", rollup_table, rollup_rows(cells), run_id=run_id)
