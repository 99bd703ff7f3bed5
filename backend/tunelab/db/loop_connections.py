"""Database connections the metrics fast path (api/ingest_fast_path) uses on the API's event loop, outside the SQL
pool: PostgreSQL connections in autocommit, each with a cursor kept (LoopConnections), and one SQLite connection
that writes only when it need not wait (LoopSqlite).

A small metrics batch costs less than what taking it to a thread and a pooled connection costs, as every other
request does: the hop to the thread, the pool's checkout and reset, and (PostgreSQL) switching the connection to
autocommit and back were ~30 % of the API's CPU for a one-point batch.
"""

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from tunelab.db import session as db_session
from tunelab.db.session import SQLITE_BUSY_TIMEOUT_S, serialized_writes, set_sqlite_pragmas, sqlite_write_lock

CONNECT_TIMEOUT_S = 5


class LoopConnections:
    """PostgreSQL connections for the event loop that created them, for a batch stored by one statement
    (services/metrics.store_at_once), awaited on the loop. At most `keep_idle` stay open between statements (the
    app keeps as many as its db_slots, which bound how many are in use at once). Like the SQL pool (db/session.py),
    it never hands out a connection that the server dropped while it sat idle: one unused for POOL_PING_AFTER_IDLE_S is
    pinged first, and one that failed mid-statement is closed, not kept."""

    def __init__(self, database_url: str, keep_idle: int) -> None:
        # The SQLAlchemy URL (postgresql+psycopg://…) as libpq reads it.
        self._conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._keep_idle = keep_idle
        self._of_thread = threading.local()  # a loop runs in one thread; tests may run two loops on one app

    @property
    def _idle(self) -> list[tuple[psycopg.AsyncRawCursor, float]]:
        """This loop's idle connections, by a cursor of each: (cursor, when it was last returned)."""
        idle = getattr(self._of_thread, "idle", None)
        if idle is None:
            idle = self._of_thread.idle = []
        return idle

    @asynccontextmanager
    async def cursor(self) -> AsyncIterator[psycopg.AsyncRawCursor]:
        """A cursor of an autocommit connection, which takes PostgreSQL's own $1 placeholders; kept with its
        connection (making one was ~3 % of a one-point batch)."""
        cursor = await self._take()
        try:
            yield cursor
        except BaseException:
            await cursor.connection.close()  # its state after a failed or interrupted statement: not worth finding out
            raise
        if len(self._idle) < self._keep_idle and not cursor.connection.closed:
            self._idle.append((cursor, time.monotonic()))
        else:
            await cursor.connection.close()

    async def _take(self) -> psycopg.AsyncRawCursor:
        while self._idle:
            cursor, returned_at = self._idle.pop()
            if cursor.connection.broken or cursor.connection.closed:
                continue
            if time.monotonic() - returned_at >= db_session.POOL_PING_AFTER_IDLE_S:  # the pool's, read each time
                try:
                    await cursor.execute("SELECT 1")
                except psycopg.Error:
                    await cursor.connection.close()
                    continue
            return cursor
        connection = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True,
                                                           connect_timeout=CONNECT_TIMEOUT_S)
        return psycopg.AsyncRawCursor(connection)

    async def close(self) -> None:
        """Close this loop's connections."""
        idle, self._of_thread.idle = self._idle, []
        for cursor, _ in idle:
            await cursor.connection.close()


class LoopSqlite:
    """One SQLite connection for writes made on the event loop, which must never wait: its busy timeout is 0, and
    write_now gives no connection when another writer holds the database (the caller then writes on a thread, which
    may wait). It never checkpoints the WAL on the loop either, where that disk work would stall every request:
    every CHECKPOINT_EVERY commits a thread checkpoints instead, while holding this process's writers back."""

    CHECKPOINT_EVERY = 200  # ~1,000 WAL pages of one-point batches, SQLite's own autocheckpoint

    def __init__(self, database: str) -> None:
        self._database = database
        self._of_thread = threading.local()  # the connection of the loop running in this thread
        self.commits = 0  # how many transactions it committed

    @contextmanager
    def write_now(self) -> Iterator[sqlite3.Connection | None]:
        """The connection inside a write transaction begun at once, which is committed after the block unless the
        block committed it, and rolled back if the block fails; None when the database is busy."""
        connection: Any  # of db/session.serialized_writes, with begin_write_now
        try:
            connection = getattr(self._of_thread, "connection", None) or self._connect()
        except sqlite3.OperationalError:  # e.g. locked while it set its pragmas: a thread will write instead
            connection = None
        if connection is None or not connection.begin_write_now():
            yield None
            return
        try:
            yield connection
            if connection.in_transaction:
                connection.commit()
        except BaseException:
            connection.rollback()
            raise
        self.commits += 1
        if self.commits % self.CHECKPOINT_EVERY == 0:
            asyncio.get_running_loop().run_in_executor(None, self._checkpoint)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._database, timeout=0, factory=serialized_writes(self._database))
        set_sqlite_pragmas(connection)
        connection.execute("PRAGMA wal_autocheckpoint=0")
        self._of_thread.connection = connection
        return connection

    def _checkpoint(self) -> None:
        # Holding the writers' lock: SQLite starts the WAL over only once every frame in it was checkpointed, which
        # a stream of writes on the loop would never let happen. Meanwhile the fast path writes on threads.
        connection = sqlite3.connect(self._database, timeout=SQLITE_BUSY_TIMEOUT_S)
        try:
            with sqlite_write_lock(self._database):
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            connection.close()

    def close(self) -> None:
        """Close this loop's connection."""
        connection, self._of_thread.connection = getattr(self._of_thread, "connection", None), None
        if connection is not None:
            connection.close()
