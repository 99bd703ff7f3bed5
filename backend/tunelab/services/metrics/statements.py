"""The SQL of ingest, built with SQLAlchemy for SQLite and PostgreSQL: the run's flush number, the batch's rows, and
the merges of summaries and rollup cells done in SQL (no read first). Built once and compiled once (driver.py)."""

import math
from collections.abc import Collection
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    ScalarSelect,
    Select,
    Table,
    Update,
    bindparam,
    case,
    func,
    literal,
    select,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.postgresql.dml import Insert as PgInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.dialects.sqlite.dml import Insert as SqliteInsert
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.selectable import Subquery, TableValuedAlias
from sqlalchemy.sql.type_api import TypeEngine

from tunelab.services.metrics.records import EVAL_LOSS_KEY, rollup_table, run_table, summary_table


def bump_seq(dialect: str, guarded: bool) -> Update:
    """The run's next flush number and, on SQLite, the stored last step of each of its keys as a JSON object (which
    new_chunks needs): one statement where two were ~10 % of a one-point batch's cost. SQLite has one writer at a
    time, whose snapshot is the latest; PostgreSQL reads them after the bump (store_points)."""
    statement = update(run_table).where(run_table.c.id == bindparam("the_run_id"))
    if guarded:  # bind names unlike the columns', which an UPDATE reserves for its SET clause
        statement = statement.where(run_table.c.project_id == bindparam("the_project_id"),
                                    run_table.c.external == bindparam("the_external"))
    statement = statement.values(metric_seq=run_table.c.metric_seq + 1)
    if dialect == "postgresql":
        return statement.returning(run_table.c.metric_seq)
    return statement.returning(run_table.c.metric_seq, stored_last_steps(run_table.c.id, dialect).scalar_subquery())


def stored_last_steps(run_id: ColumnElement[int], dialect: str) -> Select:
    as_object = func.json_object_agg if dialect == "postgresql" else func.json_group_object
    return select(as_object(summary_table.c.key, summary_table.c.last_step)).where(summary_table.c.run_id == run_id)


def batch_insert(dialect: str, table: Table, constants: tuple[str, ...] | dict[str, ColumnElement[Any]],
                  prefix: str = "", one_row: bool = False) -> PgInsert | SqliteInsert:
    """The INSERT of Driver.insert_rows: on PostgreSQL from batch_rows, on SQLite one VALUES row (executemany).
    The `constants`, columns every row shares, are bound by name, or given as expressions (e.g. a CTE's column,
    which also makes the INSERT take one row per row of that CTE)."""
    if dialect != "postgresql":
        return sqlite_insert(table)
    if not isinstance(constants, dict):
        constants = {name: bindparam(name, type_=table.c[name].type) for name in constants}
    rows = batch_rows(table, constants, prefix, one_row)
    return pg_insert(table).from_select([*constants, *rows.c.keys()], select(*constants.values(), *rows.c))


def _array_bind(name: str, element_type: TypeEngine[Any]) -> BindParameter[Any]:
    """An array parameter rendered with its cast, `%(name)s::BIGINT[]` (`$1::BIGINT[]` in store_at_once); its value
    is a literal for psycopg (array_literal), a tuple for asyncpg (_array_columns)."""
    return bindparam(name, type_=postgresql.ARRAY(element_type))


def batch_rows(table: Table, constants: Collection[str], prefix: str = "", one_row: bool = False,
                name: str | None = None) -> TableValuedAlias | Subquery:
    """PostgreSQL: rows of `table`'s columns but `constants`, named `name` (default `<prefix>batch`): from one array
    per column, each bound as `<prefix><column>_array` and cast to the column's array type (array_parameters,
    _array_columns); or with `one_row`, one row of a parameter per column, bound as `<prefix><column>`."""
    varying = [column for column in table.columns if column.name not in constants]
    name = name or f"{prefix}batch"
    if one_row:
        return select(*(sql_cast(bindparam(f"{prefix}{column.name}", type_=column.type), column.type).label(column.name)
                        for column in varying)).subquery(name)
    arrays = [_array_bind(f"{prefix}{column.name}_array", column.type) for column in varying]
    return func.unnest(*arrays).table_valued(*(column.name for column in varying)).render_derived(name=name)


@cache
def parameter_names(table: Table, constants: tuple[str, ...], prefix: str, suffix: str = "_array") -> list[str]:
    """The parameters' names of batch_rows: `<prefix><column><suffix>` for each of `table`'s columns but
    `constants`; array parameters end in `_array`, the one-row statement's have no suffix."""
    return [f"{prefix}{column.name}{suffix}" for column in table.columns if column.name not in constants]


def upsert_summaries(dialect: str, run_id: ColumnElement[int] | None = None,
                      one_row: bool = False) -> PgInsert | SqliteInsert:
    """Merge a batch's per-key summaries into the stored ones in SQL (no read first): the later last point, the
    lower min, the higher max, the counts added; min and max skip NaN, as _merge does. The run is bound as `run_id`
    unless given (store_at_once)."""
    is_pg = dialect == "postgresql"
    statement = batch_insert(dialect, summary_table, ("run_id",) if run_id is None else {"run_id": run_id},
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


def copy_eval_loss() -> Update:
    """The run's final and best eval loss, from its merged eval/loss summary."""
    def stored(column: str) -> ScalarSelect[float]:
        return select(summary_table.c[column]).where(
            summary_table.c.run_id == bindparam("the_run_id"), summary_table.c.key == EVAL_LOSS_KEY).scalar_subquery()

    return (update(run_table).where(run_table.c.id == bindparam("the_run_id"))
            .values(final_eval_loss=stored("last_value"), best_eval_loss=stored("min_value")))


def upsert_rollups(dialect: str, run_id: ColumnElement[int] | None = None,
                    one_row: bool = False) -> PgInsert | SqliteInsert:
    """Merge cells in SQL: keep the newer last point, the lower min, the higher max, add the counts. The run is bound
    as `run_id` unless given (store_at_once)."""
    is_pg = dialect == "postgresql"
    statement = batch_insert(dialect, rollup_table, ("run_id",) if run_id is None else {"run_id": run_id},
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
