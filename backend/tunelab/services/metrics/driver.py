"""Ingest's statements run on the database driver's own connection, compiled once per dialect. Speed-only: see the
package's note."""

from collections.abc import Callable, Collection
from functools import cache
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    ClauseElement,
    Connection,
    Table,
    bindparam,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.compiler import SQLCompiler

from tunelab.services.metrics.packing import array_literal
from tunelab.services.metrics.records import chunk_table
from tunelab.services.metrics.statements import (
    batch_insert,
    bump_seq,
    copy_eval_loss,
    parameter_names,
    stored_last_steps,
    upsert_rollups,
    upsert_summaries,
)


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
        built by batch_insert; returns how many rows it wrote. PostgreSQL gets one array parameter per column
        (array_parameters): executemany would run the statement once per row (each parsed, planned and answered;
        ~80 µs of API CPU for a single row). SQLite runs in this process, where stepping one prepared statement over
        the rows is the cheapest."""
        sql, fixed = _driver_sql(statement, self.dialect)
        cursor = self.connection.cursor()
        try:
            if self.dialect == "postgresql":
                cursor.execute(sql, {**fixed, **constants, **array_parameters(table, rows, constants)})
            else:
                names = [column.name for column in table.columns if column.name not in constants]
                cursor.executemany(sql, [{**constants, **dict(zip(names, row, strict=True))} for row in rows])
            return cursor.rowcount
        finally:
            cursor.close()


def array_parameters(table: Table, rows: list[tuple], constants: Collection[str], prefix: str = "") -> dict[str, Any]:
    """The rows of `table` (its columns in order, less `constants`) as the array parameters of statements.batch_rows, each
    an array literal: psycopg's list dumper costs ~0.6 µs per element where joining the C reprs costs ~0.1 µs
    (repr() of a float round-trips exactly, and PostgreSQL reads its nan/inf/-inf)."""
    return {name: array_literal(values)
            for name, values in zip(parameter_names(table, tuple(constants), prefix), zip(*rows, strict=True),
                                    strict=True)}


# The statements ingest runs on the driver (Driver), by name; each is built with SQLAlchemy for the dialect and
# compiled once (_driver_sql): building a statement costs more CPU than running a small batch's.
_STATEMENTS: dict[str, Callable[[str], ClauseElement]] = {
    "no_wal_wait": lambda _: text("SET LOCAL synchronous_commit TO OFF"),
    "bump_seq": lambda dialect: bump_seq(dialect, False),
    "bump_seq_guarded": lambda dialect: bump_seq(dialect, True),
    "chunk_steps_between": lambda _: select(chunk_table.c.step_bytes).where(
        chunk_table.c.run_id == bindparam("the_run_id"), chunk_table.c.key == bindparam("the_key"),
        chunk_table.c.last_step >= bindparam("the_first_step"), chunk_table.c.first_step <= bindparam("the_last_step")),
    "insert_chunks": lambda dialect: batch_insert(dialect, chunk_table, ("run_id", "seq")),
    "upsert_summaries": upsert_summaries,
    "copy_eval_loss": lambda _: copy_eval_loss(),
    "upsert_rollups": upsert_rollups,
    "stored_last_steps": lambda dialect: stored_last_steps(bindparam("the_run_id"), dialect),
}


# Named parameters for both drivers (sqlite3 takes :name with a dict, psycopg %(name)s).
_DRIVER_DIALECTS = {"sqlite": sqlite.dialect(paramstyle="named"), "postgresql": postgresql.psycopg.dialect()}


@cache
def _driver_sql(name: str, dialect: str) -> tuple[str, dict[str, Any]]:
    """The statement's SQL for the driver, and the values SQLAlchemy bound in it (e.g. the 1 of `metric_seq + 1`)."""
    compiled = cast(SQLCompiler, _STATEMENTS[name](dialect).compile(dialect=_DRIVER_DIALECTS[dialect]))
    bound = compiled.construct_params(_check=False)  # the required ones (no value yet) are None
    return str(compiled), {key: value for key, value in bound.items() if value is not None}
