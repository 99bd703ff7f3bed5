"""PostgreSQL: an external run's batch stored and committed by one statement on the event loop (the fast path's).
Speed-only: see the package's note."""

from collections.abc import Collection, Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Table,
    and_,
    bindparam,
    case,
    func,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.elements import BindParameter

from tunelab.core.errors import AppError
from tunelab.db.loop_connections import LoopConnections
from tunelab.services.metrics.batches import cells_of, new_chunks, rollup_rows, summarize, summary_rows
from tunelab.services.metrics.ingest import require_external
from tunelab.services.metrics.records import (
    EVAL_LOSS_KEY,
    MetricPoint,
    chunk_table,
    rollup_table,
    run_table,
    summary_table,
)
from tunelab.services.metrics.statements import (
    batch_insert,
    batch_rows,
    parameter_names,
    upsert_rollups,
    upsert_summaries,
)
from tunelab.services.runs import run_refs
from tunelab.services.runs.run_refs import RunRef


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
    require_external(run)
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
    chunks = new_chunks(None, run.id, list(points), {})  # nothing stored can overlap: the statement checks it
    cells = cells_of(chunks)
    one_row = len(cells) == 1  # then one chunk, one rollup cell and one summary: one row for each table
    summaries = summarize(cells)
    evaluated = summaries.get(EVAL_LOSS_KEY)
    sql, positions, fixed = _at_once_sql(one_row, evaluated is not None)
    columns = _row_columns if one_row else _array_columns
    arguments = {
        **columns(chunk_table, [chunk.row() for chunk in chunks], ("run_id", "seq"), "chunk_"),
        **columns(rollup_table, rollup_rows(cells), ("run_id",), "rollup_"),
        **columns(summary_table, summary_rows(summaries), ("run_id",), "summary_"),
        "the_run_id": run.id, "the_project_id": run.project_id, "the_external": run.external, **fixed,
    }
    if evaluated is not None:
        arguments |= {"eval_last": evaluated.last_value, "eval_min": evaluated.min_value}
    return sql, [arguments[name] for name in positions]


def _array_columns(table: Table, rows: list[tuple], constants: Collection[str], prefix: str) -> dict[str, tuple]:
    """The rows of `table` (its columns in order, less `constants`) as store_at_once's array arguments, one tuple
    per column, which asyncpg sends as binary arrays."""
    return dict(zip(parameter_names(table, tuple(constants), prefix), zip(*rows, strict=True), strict=True))


def _row_columns(table: Table, rows: list[tuple], constants: Collection[str], prefix: str) -> dict[str, Any]:
    """The one row of `table` as the one-row statement's arguments, a value per column."""
    [row] = rows
    return dict(zip(parameter_names(table, tuple(constants), prefix, ""), row, strict=True))


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
    and no key overlaps. The best is the least of the stored summary's and the batch's, as copy_eval_loss reads it
    from the merged summary (least() skips NaN there too)."""
    one = literal_column("1", Integer)
    run = run_table.c
    the_run_id: BindParameter[int] = bindparam("the_run_id", type_=run.id.type)
    before = select(run.metric_seq).where(run.id == the_run_id).cte("before")  # as the snapshot has it
    first_steps = batch_rows(chunk_table, [name for name in chunk_table.c.keys() if name not in ("key", "first_step")],
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
    chunks = batch_insert("postgresql", chunk_table, {"run_id": ok.c.run_id, "seq": ok.c.seq}, "chunk_", one_row)
    # It commits as the loop's connections are set: with the server's synchronous_commit, or without waiting for the
    # WAL flush in the relaxed durability, as no_wal_wait in store_points (db/loop_connections).
    return select(
        select(bump.c.metric_seq).scalar_subquery(),
        select(ok.c.seq).scalar_subquery(),
    ).add_cte(chunks.cte("chunks"), upsert_rollups("postgresql", ok.c.run_id, one_row).cte("rollups"),
              upsert_summaries("postgresql", ok.c.run_id, one_row).cte("summaries"))
