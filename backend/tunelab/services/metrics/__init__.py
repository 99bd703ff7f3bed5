"""Metric history: batched idempotent ingest, per-key summaries, capped downsampled reads and replay for live views.

A batch is stored as one packed chunk per key (MetricChunk), with per-key summaries (MetricSummary) and per-cell
rollups (MetricRollup) merged in SQL: a training run flushes every second and a compare view reads hundreds of
thousands of points.

- records     the point, the tables, the shapes returned
- batches     a batch in Python: new chunks (idempotence), rollup cells, summaries
- statements  ingest's SQL for SQLite and PostgreSQL
- ingest      storing a batch: Tunelab's runs (ORM session) and external runs (driver connection)
- reads       keys, capped and downsampled series, full-resolution pages, export pages
- replay      what a reconnecting live view missed

Speed only, and in step with the route. These exist because a script logging point by point sends thousands of
requests a second, and each would otherwise cost more CPU around its SQL than in it (the measurements are in
docs/benchmarks.md):

- driver.py and packing.py: ingest runs its statements on the database driver's connection, compiled once, and
  hands PostgreSQL a batch's columns as array literals; ingest.store_points is the one writer either way;
- at_once.py: PostgreSQL stores an external run's batch by one statement on the event loop;
- api/ingest_fast_path.py: `POST /runs/{id}/metrics` answered before FastAPI's routing for a caller the route's
  policy already let in; db/loop_connections.py: the event loop's own PostgreSQL connections.

What must stay in step with the route (api/routes/metrics.create_run_metrics, which stays the definition):
- the body: schemas/metrics.FastMetricBatch accepts a subset of MetricBatchIn, never more;
- the rules: only external runs take points from outside (ingest.require_external, checked in all three paths),
  and a batch is idempotent on (run, key, step) in all of them (batches.new_chunks; at_once's statement checks
  the overlap in SQL instead and leaves the batch to commit_external_points when there is one);
- what a batch changes: chunks, rollups, summaries, the run's flush number and its final and best eval loss
  (statements.copy_eval_loss and at_once's UPDATE), and the live event after commit;
- durability: store_points' no_wal_wait and loop_connections' session setting read the same setting;
- the answer: the fast path answers errors as api/failures does for the route, driver errors included.
The tests that hold them together: tests/unit/test_fast_metric_batch.py (the body), tests/api/test_metrics_hot_path.py
(the fast path against the route), test_metrics_commit_at_once.py (one statement against the transaction),
test_metrics_durability.py and test_loop_sqlite.py.
"""

from tunelab.services.metrics.at_once import at_once_statement, store_at_once
from tunelab.services.metrics.driver import Driver
from tunelab.services.metrics.ingest import (
    commit_external_points,
    ingest_external_points,
    ingest_points,
    store_points,
)
from tunelab.services.metrics.reads import (
    list_keys,
    points_after_step,
    points_page,
    read_many,
    read_page,
    read_points,
    read_series,
)
from tunelab.services.metrics.records import EVAL_LOSS_KEY, KeySummary, MetricPoint, SequencedPoint, Series
from tunelab.services.metrics.replay import points_after, points_after_many

__all__ = [
    "EVAL_LOSS_KEY",
    "Driver",
    "KeySummary",
    "MetricPoint",
    "SequencedPoint",
    "Series",
    "at_once_statement",
    "commit_external_points",
    "ingest_external_points",
    "ingest_points",
    "list_keys",
    "points_after",
    "points_after_many",
    "points_after_step",
    "points_page",
    "read_many",
    "read_page",
    "read_points",
    "read_series",
    "store_at_once",
    "store_points",
]
