"""Metric history: batched idempotent ingest, per-key summaries, capped downsampled reads and replay for live views.

The hot path speaks SQL directly on the driver (four statements per batch, no ORM objects per point) and stores a
batch as one packed chunk per key (MetricChunk): a training run flushes every second and a compare view reads
hundreds of thousands of points.
"""

import json
import logging
import math
import sys
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import cache
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    Connection,
    Integer,
    Row,
    ScalarSelect,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    case,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.postgresql.dml import Insert as PgInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.dialects.sqlite.dml import Insert as SqliteInsert
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.selectable import Subquery, TableValuedAlias
from sqlalchemy.sql.type_api import TypeEngine

from tunelab.core.errors import AppError
from tunelab.core.settings import get_settings
from tunelab.db.base import table_of
from tunelab.db.loop_connections import LoopConnections
from tunelab.db.models.metric import MetricChunk, MetricRollup, MetricSummary
from tunelab.db.models.run import Run
from tunelab.services import run_refs
from tunelab.services.downsample import ROLLUP_WIDTH, SeriesData, cells_per_bucket, downsample, uses_rollups
from tunelab.services.events import publish_metrics_after_commit
from tunelab.services.run_refs import RunRef

log = logging.getLogger(__name__)

EVAL_LOSS_KEY = "eval/loss"

chunk_table = table_of(MetricChunk)
summary_table = table_of(MetricSummary)
rollup_table = table_of(MetricRollup)
run_table = table_of(Run)


# (key, step, value, wall_time): plain tuples on the hot path, where a million points a minute pass through.
MetricPoint = tuple[str, int, float, float]


class SequencedPoint(NamedTuple):
    seq: int
    key: str
    step: int
    value: float
    wall_time: float


class KeySummary(NamedTuple):
    last_step: int
    last_value: float
    min_value: float
    max_value: float
    count: int  # type: ignore[assignment]  # the column's name; a field may shadow tuple.count


def ingest_points(session: Session, run_id: int, points: Sequence[MetricPoint], *,
                  remembered: RunRef | None = None) -> int:
    """Store a batch of (key, step, value, wall_time) under a new flush number and return it; the caller commits,
    and live views hear of the flush once it has."""
    seq = store_points(Driver.of(session.connection()), run_id, points, remembered=remembered)
    publish_metrics_after_commit(session, run_id, seq)
    return seq


class Driver(NamedTuple):
    """The database driver's own connection (sqlite3 or psycopg) and the dialect's name. Ingest runs its few
    statements on the driver's cursor, compiled once from the SQLAlchemy statements below: SQLAlchemy's work per
    execution (~40 µs) cost more than the statements of a small batch (a 1-point batch: ~150 µs of SQLAlchemy
    around ~50 µs of SQL). Errors are the driver's own (api/failures.py answers them as SQLAlchemy's)."""

    connection: Any
    dialect: str

    @classmethod
    def of(cls, connection: Connection) -> "Driver":
        return cls(connection.connection.driver_connection, connection.dialect.name)

    def execute(self, statement: str, parameters: dict[str, Any]) -> Any:
        """The cursor after `statement` (a key of _STATEMENTS) ran with `parameters`."""
        sql, fixed = _driver_sql(statement, self.dialect)
        cursor = self.connection.cursor()
        cursor.execute(sql, {**fixed, **parameters} if fixed else parameters)
        return cursor

    def insert_rows(self, statement: str, table: Table, rows: list[tuple], **constants: Any) -> int:
        """Rows of `table` (its columns in order, less the `constants`, which every row shares) in one statement
        built by _batch_insert; returns how many rows it wrote. PostgreSQL gets one array parameter per column
        (_array_parameters): executemany would run the statement once per row (each parsed, planned and answered;
        ~80 µs of API CPU for a single row). SQLite runs in this process, where stepping one prepared statement over
        the rows is the cheapest."""
        sql, fixed = _driver_sql(statement, self.dialect)
        cursor = self.connection.cursor()
        try:
            if self.dialect == "postgresql":
                cursor.execute(sql, {**fixed, **constants, **_array_parameters(table, rows, constants)})
            else:
                names = [column.name for column in table.columns if column.name not in constants]
                cursor.executemany(sql, [{**constants, **dict(zip(names, row, strict=True))} for row in rows])
            return cursor.rowcount
        finally:
            cursor.close()


def _array_parameters(table: Table, rows: list[tuple], constants: Collection[str], prefix: str = "") -> dict[str, Any]:
    """The rows of `table` (its columns in order, less `constants`) as the array parameters of _unnested_rows, each
    an array literal: psycopg's list dumper costs ~0.6 µs per element where joining the C reprs costs ~0.1 µs
    (repr() of a float round-trips exactly, and PostgreSQL reads its nan/inf/-inf)."""
    return {name: _array_literal(values)
            for name, values in zip(_parameter_names(table, tuple(constants), prefix), zip(*rows, strict=True),
                                    strict=True)}


@cache
def _parameter_names(table: Table, constants: tuple[str, ...], prefix: str, suffix: str = "_array") -> list[str]:
    """The parameters' names of _batch_rows: `<prefix><column><suffix>` for each of `table`'s columns but
    `constants`; array parameters end in `_array`, the one-row statement's have no suffix."""
    return [f"{prefix}{column.name}{suffix}" for column in table.columns if column.name not in constants]


def store_points(driver: Driver, run_id: int, points: Sequence[MetricPoint], *,
                 remembered: RunRef | None = None) -> int:
    """ingest_points on a driver connection (the metrics fast path has no ORM session): the caller commits, then
    calls events.publish_metrics_now.

    Idempotent on (run_id, key, step): a retried batch stores nothing twice and leaves the summaries unchanged.
    With `remembered` (services/run_refs), the run must still be in that project and external, else RUN_NOT_FOUND.
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

    chunks = _new_chunks(driver, run_id, _storable_points(driver, points), stored_last_steps)
    if chunks:
        driver.insert_rows("insert_chunks", chunk_table, [chunk.row() for chunk in chunks], run_id=run_id, seq=seq)
        cells = _cells(chunks)
        _merge_summaries(driver, run_id, _summarize(cells))
        _merge_rollups(driver, run_id, cells)
    return seq


def _bump_seq(dialect: str, guarded: bool) -> Update:
    """The run's next flush number and, on SQLite, the stored last step of each of its keys as a JSON object (which
    _new_chunks needs): one statement where two were ~10 % of a one-point batch's cost. SQLite has one writer at a
    time, whose snapshot is the latest; PostgreSQL reads them after the bump (store_points)."""
    statement = update(run_table).where(run_table.c.id == bindparam("the_run_id"))
    if guarded:  # bind names unlike the columns', which an UPDATE reserves for its SET clause
        statement = statement.where(run_table.c.project_id == bindparam("the_project_id"),
                                    run_table.c.external == bindparam("the_external"))
    statement = statement.values(metric_seq=run_table.c.metric_seq + 1)
    if dialect == "postgresql":
        return statement.returning(run_table.c.metric_seq)
    return statement.returning(run_table.c.metric_seq, _stored_last_steps(run_table.c.id, dialect).scalar_subquery())


def _stored_last_steps(run_id: ColumnElement[int], dialect: str) -> Select:
    as_object = func.json_object_agg if dialect == "postgresql" else func.json_group_object
    return select(as_object(summary_table.c.key, summary_table.c.last_step)).where(summary_table.c.run_id == run_id)


def ingest_external_points(session: Session, run: RunRef, points: Sequence[MetricPoint]) -> int:
    """Points logged from outside Tunelab, accepted only into an external run: a run Tunelab trains has one writer,
    its worker, so a point posted from elsewhere cannot overwrite or pre-empt what training logs."""
    _require_external(run)
    return ingest_points(session, run.id, points, remembered=run)


def commit_external_points(driver: Driver, run: RunRef, points: Sequence[MetricPoint]) -> int:
    """ingest_external_points on a driver connection with no transaction open, in a transaction of its own,
    committed before it returns (the metrics fast path's); the caller then calls events.publish_metrics_now."""
    _require_external(run)
    seq = store_points(driver, run.id, points, remembered=run)
    driver.connection.commit()
    return seq


async def store_at_once(connections: LoopConnections, run: RunRef, points: Sequence[MetricPoint]) -> int | None:
    """PostgreSQL: a batch of an external run stored and committed by one statement, on the event loop (the
    metrics fast path's); returns its flush number, or None when commit_external_points must store it instead.

    One round trip where commit_external_points makes eight (BEGIN, six statements, COMMIT): with the loop's own
    connection instead of a thread and the pool, it halved a one-point batch's cost, in the API and in PostgreSQL's
    backend. The statement (_store_at_once_statement)
    stores the batch only when no key's batch starts at or before the key's stored last step, which is nearly
    always, so nothing needs reading first; and only when no other flush of the run committed after its snapshot
    was taken (it then waited for the run's row lock, and the snapshot cannot see what that flush stored).
    Otherwise it only takes a flush number, which leaves a gap that replay reads past. A batch with eval/loss
    copies it to the run's final and best eval loss in the same UPDATE that takes the flush number, as a Trainer's
    batches nearly all hold one once they hold a thousand points."""
    _require_external(run)
    sql, arguments = at_once_statement(run, points)
    async with connections.connection() as connection:
        seq, stored = await connection.fetchrow(sql, *arguments)
    if seq is None:
        run_refs.forget(run.id)  # gone, moved or no longer external: the next request reads it again
        raise AppError("RUN_NOT_FOUND", f"run {run.id} does not exist", {"run_id": run.id})
    return seq if stored else None


def at_once_statement(run: RunRef, points: Sequence[MetricPoint]) -> tuple[str, list[Any]]:
    """store_at_once's SQL for this batch and its arguments in order, as asyncpg takes them (also for a profile of
    the statement: scripts/bench_ingest_cost.py)."""
    chunks = _new_chunks(None, run.id, list(points), {})  # nothing stored can overlap: the statement checks it
    cells = _cells(chunks)
    one_row = len(cells) == 1  # then one chunk, one rollup cell and one summary: one row for each table
    summaries = _summarize(cells)
    evaluated = summaries.get(EVAL_LOSS_KEY)
    sql, positions, fixed = _at_once_sql(one_row, evaluated is not None)
    columns = _row_columns if one_row else _array_columns
    arguments = {
        **columns(chunk_table, [chunk.row() for chunk in chunks], ("run_id", "seq"), "chunk_"),
        **columns(rollup_table, _rollup_rows(cells), ("run_id",), "rollup_"),
        **columns(summary_table, _summary_rows(summaries), ("run_id",), "summary_"),
        "the_run_id": run.id, "the_project_id": run.project_id, "the_external": run.external, **fixed,
    }
    if evaluated is not None:
        arguments |= {"eval_last": evaluated.last_value, "eval_min": evaluated.min_value}
    return sql, [arguments[name] for name in positions]


def _array_columns(table: Table, rows: list[tuple], constants: Collection[str], prefix: str) -> dict[str, tuple]:
    """The rows of `table` (its columns in order, less `constants`) as store_at_once's array arguments, one tuple
    per column, which asyncpg sends as binary arrays."""
    return dict(zip(_parameter_names(table, tuple(constants), prefix), zip(*rows, strict=True), strict=True))


def _row_columns(table: Table, rows: list[tuple], constants: Collection[str], prefix: str) -> dict[str, Any]:
    """The one row of `table` as the one-row statement's arguments, a value per column."""
    [row] = rows
    return dict(zip(_parameter_names(table, tuple(constants), prefix, ""), row, strict=True))


@cache
def _at_once_sql(one_row: bool, with_eval: bool) -> tuple[str, list[str], dict[str, Any]]:
    """_store_at_once_statement with PostgreSQL's own $1 placeholders, as asyncpg takes it. Returns the SQL, the
    parameters' names in order, and the values SQLAlchemy bound in it."""
    compiled = _store_at_once_statement(one_row, with_eval).compile(
        dialect=postgresql.psycopg.dialect(paramstyle="numeric_dollar"))
    bound = compiled.construct_params(_check=False)
    return str(compiled), list(compiled.positiontup or ()), {
        name: value for name, value in bound.items() if value is not None}


def _store_at_once_statement(one_row: bool, with_eval: bool = False) -> Select:
    """The statement of store_at_once. Its parts are CTEs, which PostgreSQL runs once each, all on one snapshot;
    `ok` holds the run and the new flush number when the batch is to be stored, and no row otherwise, and every
    INSERT takes its rows joined with it. Its constants are written in the SQL, not bound: each parameter costs
    the driver and PostgreSQL a conversion per execution. With `one_row` (a batch of one key within one rollup
    cell, e.g. a point per request) each table's row comes from one parameter per column instead of arrays:
    without unnest's function scans the statement cost PostgreSQL ~35 µs less, and the API ~25 µs.

    With `with_eval` the UPDATE also copies the batch's eval/loss (bound as `eval_last` and `eval_min`, its last and
    its least value) to the run's final and best eval loss, when the batch is stored. The UPDATE tells that as `ok`
    does: the row it updates (the newest version, once the row lock is had) has the flush number the snapshot saw,
    and no key overlaps. The best is the least of the stored summary's and the batch's, as _copy_eval_loss reads it
    from the merged summary (least() skips NaN there too)."""
    one = literal_column("1", Integer)
    run = run_table.c
    the_run_id: BindParameter[int] = bindparam("the_run_id", type_=run.id.type)
    before = select(run.metric_seq).where(run.id == the_run_id).cte("before")  # as the snapshot has it
    first_steps = _batch_rows(chunk_table, [name for name in chunk_table.c.keys() if name not in ("key", "first_step")],
                              "chunk_", one_row, "first_steps")
    summary = summary_table.c
    overlaps = (select(one).select_from(first_steps)
                .where(summary.run_id == the_run_id, summary.key == first_steps.c.key,
                       summary.last_step >= first_steps.c.first_step).exists())
    copied: dict[str, ColumnElement[Any]] = {}
    if with_eval:
        stores = and_(run.metric_seq == select(before.c.metric_seq).scalar_subquery(), ~overlaps)
        best_stored = select(summary.min_value).where(
            summary.run_id == the_run_id, summary.key == EVAL_LOSS_KEY).scalar_subquery()
        eval_type = run.final_eval_loss.type
        copied = {
            "final_eval_loss": case((stores, bindparam("eval_last", type_=eval_type)), else_=run.final_eval_loss),
            "best_eval_loss": case((stores, func.least(best_stored, bindparam("eval_min", type_=eval_type))),
                                   else_=run.best_eval_loss),
        }
    bump = (update(run_table)
            .where(run.id == the_run_id, run.project_id == bindparam("the_project_id"),
                   run.external == bindparam("the_external"))
            .values(metric_seq=run.metric_seq + one, **copied).returning(run.id, run.metric_seq).cte("bump"))
    ok = (select(bump.c.id.label("run_id"), bump.c.metric_seq.label("seq"))
          .where(bump.c.metric_seq == select(before.c.metric_seq).scalar_subquery() + one, ~overlaps).cte("ok"))
    chunks = _batch_insert("postgresql", chunk_table, {"run_id": ok.c.run_id, "seq": ok.c.seq}, "chunk_", one_row)
    # It commits as the loop's connections are set: with the server's synchronous_commit, or without waiting for the
    # WAL flush in the relaxed durability, as no_wal_wait in store_points (db/loop_connections).
    return select(
        select(bump.c.metric_seq).scalar_subquery(),
        select(ok.c.seq).scalar_subquery(),
    ).add_cte(chunks.cte("chunks"), _upsert_rollups("postgresql", ok.c.run_id, one_row).cte("rollups"),
              _upsert_summaries("postgresql", ok.c.run_id, one_row).cte("summaries"))


def _require_external(run: RunRef) -> None:
    if not run.external:
        raise AppError(
            "RUN_NOT_EXTERNAL",
            f"run {run.id} is trained by Tunelab, which logs its metrics itself; only a run created with "
            '"external": true accepts metrics from outside',
            {"run_id": run.id},
        )


def _storable_points(driver: Driver, points: Sequence[MetricPoint]) -> list[MetricPoint]:
    if driver.dialect != "sqlite":
        return list(points)
    # SQLite turns NaN into NULL, which the NOT NULL value column refuses; +-inf are stored faithfully. Dropping the
    # NaN points keeps a diverging run's flushes (and the rest of its metrics) flowing. (NaN is the only value
    # unequal to itself: the cheapest test on the hot path.)
    storable = [point for point in points if point[2] == point[2]]
    if len(storable) < len(points):
        log.warning("SQLite cannot store NaN: dropped %d metric points", len(points) - len(storable))
    return storable


class NewChunk(NamedTuple):
    """A flush's new points of one key, in columns, in step order (a row of metric_chunk once packed)."""

    key: str
    steps: list[int]
    values: list[float]
    wall_times: list[float]

    def row(self) -> tuple:
        """The metric_chunk columns after run_id and seq."""
        return (self.key, self.steps[0], self.steps[-1], len(self.steps), _pack("q", self.steps),
                _pack("d", self.values), _pack("d", self.wall_times))


def _new_chunks(driver: Driver | None, run_id: int, points: list[MetricPoint],
                stored_last_steps: dict[str, int]) -> list[NewChunk]:
    """The batch per key, each in step order, less every (key, step) already stored or repeated in the batch (the
    first one sent wins): what makes ingest idempotent now that no primary key holds a point. The stored last step
    of each key (its summary, read by the seq bump) tells whether a key's batch can overlap what is stored: nearly
    never (steps grow), and only then are the stored chunks of its step range read. Without a driver nothing is
    read: store_at_once's statement checks the overlap itself."""
    if not points:
        return []
    by_key: defaultdict[str, list[MetricPoint]] = defaultdict(list)
    for point in points:
        by_key[point[0]].append(point)
    chunks = []
    for key, members in by_key.items():
        steps = list(map(_step_of, members))
        if not all(map(int.__lt__, steps, steps[1:])):  # not strictly ascending: sort, keeping each step's first
            first_of_step: dict[int, MetricPoint] = {}
            for point in members:
                first_of_step.setdefault(point[1], point)
            members = sorted(first_of_step.values(), key=_step_of)
            steps = list(map(_step_of, members))
        stored_last_step = stored_last_steps.get(key)
        if driver is not None and stored_last_step is not None and steps[0] <= stored_last_step:
            stored = _stored_steps(driver, run_id, key, steps[0], steps[-1])
            members = [point for point in members if point[1] not in stored]
            steps = list(map(_step_of, members))
        if members:
            chunks.append(NewChunk(key, steps, list(map(_value_of, members)), list(map(_wall_time_of, members))))
    return chunks


def _stored_steps(driver: Driver, run_id: int, key: str, first_step: int, last_step: int) -> set[int]:
    cursor = driver.execute("chunk_steps_between", {"the_run_id": run_id, "the_key": key,
                                                    "the_first_step": first_step, "the_last_step": last_step})
    stored: set[int] = set()
    for (step_bytes,) in cursor.fetchall():
        stored.update(_unpack("q", step_bytes))
    cursor.close()
    return stored


# Chunks are little-endian whatever the machine, so a database file or dump moves between machines as it is.
_NATIVE_IS_LITTLE_ENDIAN = sys.byteorder == "little"


def _pack(typecode: str, numbers: Iterable[float]) -> bytes:
    packed = array(typecode, numbers)
    if not _NATIVE_IS_LITTLE_ENDIAN:
        packed.byteswap()
    return packed.tobytes()


def _unpack(typecode: str, data: bytes) -> array:
    unpacked = array(typecode)
    unpacked.frombytes(data)
    if not _NATIVE_IS_LITTLE_ENDIAN:
        unpacked.byteswap()
    return unpacked


def _array_literal(values: Sequence[Any]) -> str:
    """A column's values as one PostgreSQL array literal, a parameter of Driver.insert_rows (psycopg)."""
    if isinstance(values[0], str):
        return _text_array(values)
    if isinstance(values[0], bytes):
        return _bytea_array(values)
    return _number_array(values)


def _bytea_array(blobs: Sequence[bytes]) -> str:
    """A PostgreSQL bytea[] literal of hex elements (backslash, x, the hex digits; the backslash escaped for the array
    literal): the hex that psycopg's list dumper sends too, dumped in ~0.9 µs instead of ~5.5 µs for a chunk."""
    return "{" + ",".join(['"\\\\x' + blob.hex() + '"' for blob in blobs]) + "}"


def _text_array(texts: Sequence[str]) -> str:
    """A PostgreSQL text[] literal; each distinct text is quoted once (a batch repeats a few keys)."""
    quoted: dict[str, str] = {}
    for text_ in texts:
        if text_ not in quoted:
            quoted[text_] = '"' + text_.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "{" + ",".join([quoted[text_] for text_ in texts]) + "}"


def _number_array(numbers: Sequence[float]) -> str:
    return "{" + ",".join(map(repr, numbers)) + "}"


def _nan_min(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _nan_max(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def _nan_wins_max(a: float, b: float) -> float:
    """max with NaN above every number, as PostgreSQL orders floats (a bucket holding a NaN shows it)."""
    return a if math.isnan(a) else b if math.isnan(b) else max(a, b)


class Cell(NamedTuple):
    """New points of one key in one ROLLUP_WIDTH-step cell."""

    last_step: int
    last_value: float
    last_wall_time: float
    min_value: float  # NaN skipped
    max_value: float  # NaN wins: a cell holding a NaN shows it, as PostgreSQL orders floats
    max_number: float  # NaN skipped, for the summaries
    count: int  # type: ignore[assignment]  # a field may shadow tuple.count


def _cells(chunks: list[NewChunk]) -> dict[tuple[str, int], Cell]:
    """The new points by (key, cell). A chunk is in step order, so each cell is a slice found by bisection and its
    min and max are C builtins over the slice: no Python work per point."""
    cells = {}
    for key, steps, values, wall_times in chunks:
        has_nan = math.isnan(sum(values))  # also true for +inf plus -inf: then just slower
        start, end_of_chunk = 0, len(steps)
        while start < end_of_chunk:
            cell_id = steps[start] // ROLLUP_WIDTH
            end = bisect_left(steps, (cell_id + 1) * ROLLUP_WIDTH, start)
            last, cell_values = end - 1, values[start:end]
            if has_nan and any(map(math.isnan, cell_values)):
                numbers = [value for value in cell_values if not math.isnan(value)]
                low, high = (min(numbers), max(numbers)) if numbers else (math.nan, math.nan)
                cells[key, cell_id] = Cell(steps[last], values[last], wall_times[last], low, math.nan, high, end - start)
            else:
                low, high = min(cell_values), max(cell_values)
                cells[key, cell_id] = Cell(steps[last], values[last], wall_times[last], low, high, high, end - start)
            start = end
    return cells


_step_of = itemgetter(1)  # of a MetricPoint, in C
_value_of = itemgetter(2)
_wall_time_of = itemgetter(3)


def _summarize(cells: dict[tuple[str, int], Cell]) -> dict[str, KeySummary]:
    """Per-key summary of new points; min/max skip NaN (a NaN loss must not hide the best loss reached)."""
    summaries: dict[str, KeySummary] = {}
    for (key, _), cell in cells.items():
        new = KeySummary(cell.last_step, cell.last_value, cell.min_value, cell.max_number, cell.count)
        summaries[key] = _merge(summaries[key], new) if key in summaries else new
    return summaries


def _merge(old: KeySummary, new: KeySummary) -> KeySummary:
    last_step, last_value = new[:2] if new.last_step >= old.last_step else old[:2]
    return KeySummary(
        last_step,
        last_value,
        _nan_min(old.min_value, new.min_value),
        _nan_max(old.max_value, new.max_value),
        old.count + new.count,
    )


def _batch_insert(dialect: str, table: Table, constants: tuple[str, ...] | dict[str, ColumnElement[Any]],
                  prefix: str = "", one_row: bool = False) -> PgInsert | SqliteInsert:
    """The INSERT of Driver.insert_rows: on PostgreSQL from _batch_rows, on SQLite one VALUES row (executemany).
    The `constants`, columns every row shares, are bound by name, or given as expressions (e.g. a CTE's column,
    which also makes the INSERT take one row per row of that CTE)."""
    if dialect != "postgresql":
        return sqlite_insert(table)
    if not isinstance(constants, dict):
        constants = {name: bindparam(name, type_=table.c[name].type) for name in constants}
    rows = _batch_rows(table, constants, prefix, one_row)
    return pg_insert(table).from_select([*constants, *rows.c.keys()], select(*constants.values(), *rows.c))


def _array_bind(name: str, element_type: TypeEngine[Any]) -> BindParameter[Any]:
    """An array parameter rendered with its cast, `%(name)s::BIGINT[]` (`$1::BIGINT[]` in store_at_once); its value
    is a literal for psycopg (_array_literal), a tuple for asyncpg (_array_columns)."""
    return bindparam(name, type_=postgresql.ARRAY(element_type))


def _batch_rows(table: Table, constants: Collection[str], prefix: str = "", one_row: bool = False,
                name: str | None = None) -> TableValuedAlias | Subquery:
    """PostgreSQL: rows of `table`'s columns but `constants`, named `name` (default `<prefix>batch`): from one array
    per column, each bound as `<prefix><column>_array` and cast to the column's array type (_array_parameters,
    _array_columns); or with `one_row`, one row of a parameter per column, bound as `<prefix><column>`."""
    varying = [column for column in table.columns if column.name not in constants]
    name = name or f"{prefix}batch"
    if one_row:
        return select(*(sql_cast(bindparam(f"{prefix}{column.name}", type_=column.type), column.type).label(column.name)
                        for column in varying)).subquery(name)
    arrays = [_array_bind(f"{prefix}{column.name}_array", column.type) for column in varying]
    return func.unnest(*arrays).table_valued(*(column.name for column in varying)).render_derived(name=name)


def _upsert_summaries(dialect: str, run_id: ColumnElement[int] | None = None,
                      one_row: bool = False) -> PgInsert | SqliteInsert:
    """Merge a batch's per-key summaries into the stored ones in SQL (no read first): the later last point, the
    lower min, the higher max, the counts added; min and max skip NaN, as _merge does. The run is bound as `run_id`
    unless given (store_at_once)."""
    is_pg = dialect == "postgresql"
    statement = _batch_insert(dialect, summary_table, ("run_id",) if run_id is None else {"run_id": run_id},
                              "" if run_id is None else "summary_", one_row)
    current, new = summary_table.c, statement.excluded
    newer = new.last_step >= current.last_step
    min_value: ColumnElement[float]
    max_value: ColumnElement[float]
    if is_pg:
        # PostgreSQL's least() already skips NaN (it orders NaN above every number); for the max, NaN loses.
        nan = literal(math.nan)
        min_value = func.least(current.min_value, new.min_value)
        max_value = case((new.max_value == nan, current.max_value), (current.max_value == nan, new.max_value),
                         else_=func.greatest(current.max_value, new.max_value))
    else:  # SQLite stores no NaN
        min_value, max_value = func.min(current.min_value, new.min_value), func.max(current.max_value, new.max_value)
    return statement.on_conflict_do_update(
        index_elements=[current.run_id, current.key],
        set_={
            "last_step": case((newer, new.last_step), else_=current.last_step),
            "last_value": case((newer, new.last_value), else_=current.last_value),
            "min_value": min_value,
            "max_value": max_value,
            "count": current.count + new.count,
        },
    )


def _merge_summaries(driver: Driver, run_id: int, batch: dict[str, KeySummary]) -> None:
    """One statement for the batch; the run row lock taken by the seq bump keeps concurrent merges apart."""
    driver.insert_rows("upsert_summaries", summary_table, _summary_rows(batch), run_id=run_id)
    if EVAL_LOSS_KEY in batch:
        driver.execute("copy_eval_loss", {"the_run_id": run_id}).close()


def _summary_rows(summaries: dict[str, KeySummary]) -> list[tuple]:
    """The metric_summary columns after run_id."""
    return [(key, *summary) for key, summary in summaries.items()]


def _copy_eval_loss() -> Update:
    """The run's final and best eval loss, from its merged eval/loss summary."""
    def stored(column: str) -> ScalarSelect[float]:
        return select(summary_table.c[column]).where(
            summary_table.c.run_id == bindparam("the_run_id"), summary_table.c.key == EVAL_LOSS_KEY).scalar_subquery()

    return (update(run_table).where(run_table.c.id == bindparam("the_run_id"))
            .values(final_eval_loss=stored("last_value"), best_eval_loss=stored("min_value")))


def _upsert_rollups(dialect: str, run_id: ColumnElement[int] | None = None,
                    one_row: bool = False) -> PgInsert | SqliteInsert:
    """Merge cells in SQL: keep the newer last point, the lower min, the higher max, add the counts. The run is bound
    as `run_id` unless given (store_at_once)."""
    is_pg = dialect == "postgresql"
    statement = _batch_insert(dialect, rollup_table, ("run_id",) if run_id is None else {"run_id": run_id},
                              "" if run_id is None else "rollup_", one_row)
    current, new = rollup_table.c, statement.excluded
    # NaN sorts above every number in PostgreSQL's greatest/least, as in downsample(); SQLite stores no NaN.
    least, greatest = (func.least, func.greatest) if is_pg else (func.min, func.max)
    newer = new.last_step >= current.last_step
    return statement.on_conflict_do_update(
        index_elements=[current.run_id, current.key, current.cell],
        set_={
            "last_step": case((newer, new.last_step), else_=current.last_step),
            "last_value": case((newer, new.last_value), else_=current.last_value),
            "last_wall_time": case((newer, new.last_wall_time), else_=current.last_wall_time),
            "min_value": least(current.min_value, new.min_value),
            "max_value": greatest(current.max_value, new.max_value),
            "count": current.count + new.count,
        },
    )


def _merge_rollups(driver: Driver, run_id: int, cells: dict[tuple[str, int], Cell]) -> None:
    """Fold the batch's cells into the stored rollups: one statement for the batch."""
    driver.insert_rows("upsert_rollups", rollup_table, _rollup_rows(cells), run_id=run_id)


def _rollup_rows(cells: dict[tuple[str, int], Cell]) -> list[tuple]:
    """The metric_rollup columns after run_id."""
    return [(key, cell_id, cell.last_step, cell.last_value, cell.last_wall_time, cell.min_value, cell.max_value,
             cell.count) for (key, cell_id), cell in cells.items()]


# The statements ingest runs on the driver (Driver), by name; each is built with SQLAlchemy for the dialect and
# compiled once (_driver_sql): building a statement costs more CPU than running a small batch's.
_STATEMENTS: dict[str, Callable[[str], ClauseElement]] = {
    "no_wal_wait": lambda _: text("SET LOCAL synchronous_commit TO OFF"),
    "bump_seq": lambda dialect: _bump_seq(dialect, False),
    "bump_seq_guarded": lambda dialect: _bump_seq(dialect, True),
    "chunk_steps_between": lambda _: select(chunk_table.c.step_bytes).where(
        chunk_table.c.run_id == bindparam("the_run_id"), chunk_table.c.key == bindparam("the_key"),
        chunk_table.c.last_step >= bindparam("the_first_step"), chunk_table.c.first_step <= bindparam("the_last_step")),
    "insert_chunks": lambda dialect: _batch_insert(dialect, chunk_table, ("run_id", "seq")),
    "upsert_summaries": _upsert_summaries,
    "copy_eval_loss": lambda _: _copy_eval_loss(),
    "upsert_rollups": _upsert_rollups,
    "stored_last_steps": lambda dialect: _stored_last_steps(bindparam("the_run_id"), dialect),
}
# Named parameters for both drivers (sqlite3 takes :name with a dict, psycopg %(name)s).
_DRIVER_DIALECTS = {"sqlite": sqlite.dialect(paramstyle="named"), "postgresql": postgresql.psycopg.dialect()}


@cache
def _driver_sql(name: str, dialect: str) -> tuple[str, dict[str, Any]]:
    """The statement's SQL for the driver, and the values SQLAlchemy bound in it (e.g. the 1 of `metric_seq + 1`)."""
    compiled = cast(SQLCompiler, _STATEMENTS[name](dialect).compile(dialect=_DRIVER_DIALECTS[dialect]))
    bound = compiled.construct_params(_check=False)  # the required ones (no value yet) are None
    return str(compiled), {key: value for key, value in bound.items() if value is not None}


def list_keys(session: Session, run_id: int) -> list[str]:
    """The run's metric keys, sorted; from the summaries, so no history is scanned."""
    _require_runs(session, [run_id])
    return list(
        session.scalars(select(summary_table.c.key).where(summary_table.c.run_id == run_id).order_by(summary_table.c.key))
    )


def read_series(session: Session, run_id: int, keys: list[str] | None, max_points: int) -> dict[str, SeriesData]:
    """The run's series (all keys when `keys` is None), each capped at `max_points`; unknown keys are left out."""
    return read_many(session, [run_id], keys, max_points)[run_id]


def read_page(
    session: Session, run_id: int, keys: list[str] | None, after_step: int, limit: int
) -> dict[str, SeriesData]:
    """Full resolution past any length: each series' points with step > `after_step`, `limit` at most, and where
    to continue (`next_after_step`, None at the end)."""
    _require_runs(session, [run_id])
    condition = [summary_table.c.run_id == run_id]
    if keys is not None:
        condition.append(summary_table.c.key.in_(keys))
    counts = session.execute(
        select(summary_table.c.key, summary_table.c.count).where(*condition).order_by(summary_table.c.key)).all()
    pages = {}
    for key, count in counts:
        steps, values, wall_times = points_after_step(session, run_id, key, after_step, limit + 1)
        more = len(steps) > limit
        pages[key] = SeriesData(steps[:limit], values[:limit], wall_times[:limit], None, None, count,
                                next_after_step=steps[limit - 1] if more else None)
    return pages


def points_page(session: Session, run_id: int, after: tuple[str, int] | None, limit: int) -> list[MetricPoint]:
    """Every key's points in (key, step) order, `limit` at most, after the (key, step) `after`: the export's
    keyset pages, so a history of any length streams in bounded memory."""
    keys = select(summary_table.c.key).where(summary_table.c.run_id == run_id).order_by(summary_table.c.key)
    if after is not None:
        keys = keys.where(summary_table.c.key >= after[0])
    page: list[MetricPoint] = []
    for key in session.scalars(keys):
        after_step = after[1] if after is not None and key == after[0] else None
        steps, values, wall_times = points_after_step(session, run_id, key, after_step, limit - len(page))
        page.extend(zip([key] * len(steps), steps, values, wall_times, strict=True))
        if len(page) >= limit:
            break
    return page


Series = tuple[list[int], list[float], list[float]]  # steps (ascending), values, wall times


def points_after_step(session: Session, run_id: int, key: str, after_step: int | None, limit: int) -> Series:
    """The first `limit` points of a key with step > `after_step` (any step when None), in step order. The key's
    chunks past `after_step` are taken in order of their first step, and only until no chunk left can hold a step
    before the `limit`-th found: a page reads about `limit` points, however long the series and however its
    flushes interleave."""
    chunk = chunk_table.c
    spans = _spans_by_first_step(session, run_id, key, after_step)
    found: list[tuple[int, float, float]] = []
    batch: list[int]
    pending = next(spans, None)
    while pending is not None:
        if len(found) >= limit and pending[0] > found[limit - 1][0]:
            break  # every chunk left starts after the limit-th point found
        wanted, batch = limit - len(found), []  # seqs of the chunks to read next
        while pending is not None and (wanted > 0 or not batch):  # enough chunks to fill the page, one at least
            batch.append(pending[1])
            wanted -= pending[2]
            pending = next(spans, None)
        steps, values, wall_times = _chunk_points(session.execute(
            select(chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
            .where(chunk.run_id == run_id, chunk.key == key, chunk.seq.in_(batch))))
        found.extend(point for point in zip(steps, values, wall_times, strict=True)
                     if after_step is None or point[0] > after_step)
        found.sort(key=itemgetter(0))
        del found[limit:]  # a later chunk can only push these out
    return [point[0] for point in found], [point[1] for point in found], [point[2] for point in found]


_SPANS_PER_READ = 256


def _spans_by_first_step(session: Session, run_id: int, key: str, after_step: int | None) -> Iterator[Row]:
    """(first_step, seq, count) of the key's chunks past `after_step`, in order of first step, read a few hundred
    at a time: the first point of a long series reads one such page, not a row per flush."""
    chunk = chunk_table.c
    condition = [chunk.run_id == run_id, chunk.key == key]
    if after_step is not None:
        condition.append(chunk.last_step > after_step)
    resume: list[ColumnElement[bool]] = []  # past the last span read
    while True:
        page = session.execute(select(chunk.first_step, chunk.seq, chunk.count).where(*condition, *resume)
                               .order_by(chunk.first_step, chunk.seq).limit(_SPANS_PER_READ)).all()
        yield from page
        if len(page) < _SPANS_PER_READ:
            return
        resume = [tuple_(chunk.first_step, chunk.seq) > tuple_(*page[-1][:2])]


def read_points(session: Session, run_id: int, key: str) -> Series:
    """Every point of one series, in step order."""
    return _chunk_points(session.execute(
        select(chunk_table.c.step_bytes, chunk_table.c.value_bytes, chunk_table.c.wall_time_bytes)
        .where(chunk_table.c.run_id == run_id, chunk_table.c.key == key)
        .order_by(chunk_table.c.last_step)))


def _chunk_points(chunks: Iterable[Sequence[bytes]]) -> Series:
    """The points of one key's chunks, in step order. Chunks that come in order of their last step are already in
    step order unless their step ranges interleave (steps logged out of order), which costs a sort."""
    steps, values, wall_times = array("q"), array("d"), array("d")
    ordered = True
    for step_bytes, value_bytes, wall_time_bytes in chunks:
        start = len(steps)
        steps.frombytes(step_bytes)
        values.frombytes(value_bytes)
        wall_times.frombytes(wall_time_bytes)
        ordered = ordered and (start == 0 or steps[start - 1] < steps[start])
    if not _NATIVE_IS_LITTLE_ENDIAN:
        for column in (steps, values, wall_times):
            column.byteswap()
    if ordered:
        return steps.tolist(), values.tolist(), wall_times.tolist()
    order = sorted(range(len(steps)), key=steps.__getitem__)
    return [steps[i] for i in order], [values[i] for i in order], [wall_times[i] for i in order]


def read_many(
    session: Session, run_ids: Sequence[int], keys: list[str] | None, max_points: int
) -> dict[int, dict[str, SeriesData]]:
    """Every run × key in one call (the compare view); series longer than `max_points` are bucketed."""
    run_ids = list(dict.fromkeys(run_ids))
    _require_runs(session, run_ids)
    condition = [summary_table.c.run_id.in_(run_ids)]
    if keys is not None:
        condition.append(summary_table.c.key.in_(keys))
    counts = session.execute(
        select(summary_table.c.run_id, summary_table.c.key, summary_table.c.count, summary_table.c.last_step)
        .where(*condition)
        .order_by(summary_table.c.run_id, summary_table.c.key)
    ).all()
    series: dict[int, dict[str, SeriesData]] = {run_id: {} for run_id in run_ids}
    exact = _read_exact(session, [(run_id, key) for run_id, key, count, _ in counts if count <= max_points])
    for run_id, key, count, last_step in counts:
        series[run_id][key] = exact.get((run_id, key)) or _read_bucketed(session, run_id, key, count, last_step, max_points)
    return series


def _read_exact(session: Session, series_ids: list[tuple[int, str]]) -> dict[tuple[int, str], SeriesData]:
    """All points of series that fit, in one query."""
    if not series_ids:
        return {}
    chunk = chunk_table.c
    rows = session.execute(
        select(chunk.run_id, chunk.key, chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
        .where(tuple_(chunk.run_id, chunk.key).in_(series_ids))
        .order_by(chunk.run_id, chunk.key, chunk.last_step)
    ).all()
    exact = {}
    for series_id, group in groupby(rows, key=itemgetter(0, 1)):
        steps, values, wall_times = _chunk_points(row[2:] for row in group)
        exact[series_id] = SeriesData(steps, values, wall_times, None, None, len(steps))
    return exact


def _read_bucketed(session: Session, run_id: int, key: str, count: int, last_step: int, max_points: int) -> SeriesData:
    # The first step is the least first step of the key's chunks, read from their index; the summary holds the rest.
    first_step = session.scalar(
        select(func.min(chunk_table.c.first_step)).where(chunk_table.c.run_id == run_id, chunk_table.c.key == key)
    )
    if uses_rollups(first_step, last_step, max_points):
        return _read_from_rollups(session, run_id, key, count, first_step, last_step, max_points)
    # At most ROLLUP_WIDTH·max_points steps: unpacking them is a copy, and downsample() buckets them in C slices.
    return downsample(*read_points(session, run_id, key), max_points)


def _read_from_rollups(
    session: Session, run_id: int, key: str, count: int, first_step: int, last_step: int, max_points: int
) -> SeriesData:
    """Merge the series' rollup cells, k a bucket. At most count/1 and typically count/ROLLUP_WIDTH rows are read,
    in primary-key order, and merged here: a plain range read that no query plan can turn into a scan per bucket."""
    first_cell, per_bucket = first_step // ROLLUP_WIDTH, cells_per_bucket(first_step, last_step, max_points)
    cells = session.execute(
        select(rollup_table.c.cell, rollup_table.c.last_step, rollup_table.c.last_value, rollup_table.c.last_wall_time,
               rollup_table.c.min_value, rollup_table.c.max_value)
        .where(rollup_table.c.run_id == run_id, rollup_table.c.key == key)
        .order_by(rollup_table.c.cell)
    )
    buckets: list[list] = []  # [last_step, last_value, last_wall_time, min, max] per bucket
    current_bucket = None
    for cell, step, value, wall_time, low, high in cells:
        bucket = (cell - first_cell) // per_bucket
        if bucket != current_bucket:
            current_bucket = bucket
            buckets.append([step, value, wall_time, low, high])
            continue
        merged = buckets[-1]
        # Cells come in step order, so the newest cell holds the bucket's last point.
        merged[0], merged[1], merged[2] = step, value, wall_time
        merged[3], merged[4] = _nan_min(merged[3], low), _nan_wins_max(merged[4], high)
    steps, values, wall_times, minima, maxima = (list(column) for column in zip(*buckets, strict=True))
    return SeriesData(steps, values, wall_times, minima, maxima, count)


def points_after(session: Session, run_id: int, after_seq: int, limit: int) -> list[SequencedPoint]:
    """Points of flushes after `after_seq`, in flush order: what a reconnecting live view missed."""
    return [point for _, point in points_after_many(session, {run_id: after_seq}, limit)]


def points_after_many(session: Session, after: dict[int, int], limit: int) -> list[tuple[int, SequencedPoint]]:
    """(run_id, point) of every run in `after` past its flush number, ordered by run, flush, key and step, `limit`
    points at most: a range of metric_chunk's primary key per run. The chunks needed are found first, from their
    counts, so that a replay from far behind reads only what it returns."""
    chunk = chunk_table.c
    counts = session.execute(
        select(chunk.run_id, chunk.seq, chunk.count)
        .where(or_(*(and_(chunk.run_id == run_id, chunk.seq > seq) for run_id, seq in after.items())))
        .order_by(chunk.run_id, chunk.seq, chunk.key)
        .limit(limit)  # every chunk holds a point at least
    ).all()
    last_needed: dict[int, int] = {}
    covered = 0
    for run_id, seq, count in counts:
        last_needed[run_id] = seq
        covered += count
        if covered >= limit:
            break
    if not last_needed:
        return []
    chunks = session.execute(
        select(chunk.run_id, chunk.seq, chunk.key, chunk.step_bytes, chunk.value_bytes, chunk.wall_time_bytes)
        .where(or_(*(and_(chunk.run_id == run_id, chunk.seq > after[run_id], chunk.seq <= last_seq)
                     for run_id, last_seq in last_needed.items())))
        .order_by(chunk.run_id, chunk.seq, chunk.key)
    )
    replay: list[tuple[int, SequencedPoint]] = []
    for run_id, seq, key, *packed in chunks:
        steps, values, wall_times = _chunk_points([packed])
        replay.extend((run_id, SequencedPoint(seq, key, *point))
                      for point in zip(steps, values, wall_times, strict=True))
        if len(replay) >= limit:
            break
    del replay[limit:]
    return replay


def _require_runs(session: Session, run_ids: Sequence[int]) -> None:
    found = set(session.scalars(select(run_table.c.id).where(run_table.c.id.in_(run_ids))))
    missing = [run_id for run_id in run_ids if run_id not in found]
    if missing:
        raise AppError("RUN_NOT_FOUND", f"run {missing[0]} does not exist", {"run_ids": missing})
