"""Database connections the metrics fast path (api/ingest_fast_path) uses on the API's event loop, outside the SQL
pool: PostgreSQL connections by asyncpg, each kept open between statements (LoopConnections), and one SQLite
connection that writes only when it need not wait (LoopSqlite).

A small metrics batch costs less than what taking it to a thread and a pooled connection costs, as every other
request does: the hop to the thread, the pool's checkout and reset, and (PostgreSQL) switching the connection to
autocommit and back were ~30 % of the API's CPU for a one-point batch. On the loop, asyncpg's protocol (in C, binary
parameters, its prepared statement kept per connection) cost ~60 µs less of API CPU per batch than psycopg's
asynchronous cursor, whose protocol runs in Python generators and registers its socket with the loop on every wait.
"""

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from tunelab.core.settings import get_settings
from tunelab.db import session as db_session
from tunelab.db.session import SQLITE_BUSY_TIMEOUT_S, serialized_writes, set_sqlite_pragmas, sqlite_write_lock

CONNECT_TIMEOUT_S = 5


class LoopDatabaseUnavailable(Exception):
    """The loop could not reach PostgreSQL, or lost its connection mid-statement (the API answers 503)."""


# What asyncpg raises when the server cannot be reached or the connection is gone, rather than for a statement that
# failed: a refused or timed-out connect, a closed connection, the server shutting down or terminating the backend.
_UNAVAILABLE = (OSError, asyncio.TimeoutError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError,
                asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError, asyncpg.CrashShutdownError)


class LoopConnections:
    """PostgreSQL connections for the event loop that created them, for a batch stored by one statement
    (services/metrics.store_at_once), awaited on the loop. At most `max_open` are open at once, in use or kept
    between statements (the app's share of its connection budget, Settings.db_loop_connections); a batch that finds
    them all in use waits on the loop for one. Like the SQL pool (db/session.py), it never hands out a connection
    that the server dropped while it sat idle: one unused for POOL_PING_AFTER_IDLE_S is pinged first, and one that
    failed mid-statement is closed, not kept. A connection that cannot be made or is lost mid-statement raises
    LoopDatabaseUnavailable."""

    def __init__(self, database_url: str, max_open: int) -> None:
        # The SQLAlchemy URL (postgresql+psycopg://…) as a libpq DSN, which asyncpg reads too.
        self._dsn = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._max_open = max_open
        self._of_thread = threading.local()  # a loop runs in one thread; tests may run two loops on one app

    @property
    def _idle(self) -> list[tuple[asyncpg.Connection, float]]:
        """This loop's idle connections: (connection, when it was last returned)."""
        idle = getattr(self._of_thread, "idle", None)
        if idle is None:
            idle = self._of_thread.idle = []
        return idle

    @property
    def _open(self) -> asyncio.Semaphore:
        """One token per connection this loop may have open, taken while a connection is in use."""
        tokens = getattr(self._of_thread, "tokens", None)
        if tokens is None:
            tokens = self._of_thread.tokens = asyncio.Semaphore(self._max_open)
        return tokens

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection in autocommit (asyncpg's default outside a transaction), kept with its prepared statements."""
        async with self._open:
            connection = await self._take()
            try:
                yield connection
            except _UNAVAILABLE as exc:
                connection.terminate()
                raise LoopDatabaseUnavailable(f"lost the connection to PostgreSQL: {exc}") from exc
            except BaseException:
                connection.terminate()  # its state after a failed or interrupted statement: not worth finding out
                raise
            if not connection.is_closed():
                self._idle.append((connection, time.monotonic()))

    async def _take(self) -> asyncpg.Connection:
        while self._idle:
            connection, returned_at = self._idle.pop()
            if connection.is_closed():
                continue
            if time.monotonic() - returned_at >= db_session.POOL_PING_AFTER_IDLE_S:  # the pool's, read each time
                try:
                    await connection.execute("SELECT 1")
                except (*_UNAVAILABLE, asyncpg.PostgresError):
                    connection.terminate()
                    continue
            return connection
        server_settings = {"application_name": db_session.application_name()}
        if get_settings().metrics_durability == "relaxed":
            # They store metrics only: in the relaxed mode a commit does not wait for the WAL flush, as
            # services/metrics.store_points' transactions then do not. Set for the session, not per statement:
            # PostgreSQL then restores no setting at each commit. Durable (the default) leaves the server's own.
            server_settings["synchronous_commit"] = "off"
        try:
            return await asyncpg.connect(self._dsn, timeout=CONNECT_TIMEOUT_S, server_settings=server_settings)
        except (*_UNAVAILABLE, asyncpg.PostgresError) as exc:
            raise LoopDatabaseUnavailable(f"could not connect to PostgreSQL: {exc}") from exc

    async def close(self) -> None:
        """Close this loop's connections."""
        idle, self._of_thread.idle = self._idle, []
        for connection, _ in idle:
            await connection.close()


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
