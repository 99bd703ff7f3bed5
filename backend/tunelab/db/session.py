"""Engine and session factory, one per process, built from settings."""

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, lru_cache

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from tunelab.core.settings import Settings, get_settings


def _pool_kwargs(settings: Settings) -> dict:
    """A connection for each thread that can use one (Settings.pool_size): no more requests hold a transaction than
    the pool has connections for (Settings.db_slots, api/deps.py), so none waits for a connection; the overflow is
    for sessions opened outside requests. The pool and its overflow are this process's connection budget less the
    event loop's share (Settings.db_max_connections). A wait longer than db_pool_timeout_s fails (503) instead of
    stalling."""
    return {"pool_size": settings.pool_size, "max_overflow": settings.pool_overflow,
            "pool_timeout": settings.db_pool_timeout_s}


# What `tunelab api`, `worker` and `train` name themselves (name_process), inherited by the processes they start.
PROCESS_ROLE_ENV = "TUNELAB_PROCESS_ROLE"


def name_process(role: str) -> None:
    """Name the database connections of this process and of those it starts (until they name their own)."""
    os.environ[PROCESS_ROLE_ENV] = role


def application_name() -> str:
    """`tunelab <role> <pid>`, PostgreSQL's application_name for this process's connections: pg_stat_activity then
    tells whose each connection is, to hold each process to its budget and to size max_connections. Read at each
    connect, so a forked process names its own."""
    return f"tunelab {os.environ.get(PROCESS_ROLE_ENV, 'process')} {os.getpid()}"


SQLITE_BUSY_TIMEOUT_S = 30.0
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


@cache
def sqlite_write_lock(database: str) -> threading.Lock:
    """What this process's writers of a SQLite database file queue on (serialized_writes)."""
    return threading.Lock()


@cache
def serialized_writes(database: str) -> type[sqlite3.Connection]:
    """A pysqlite connection class whose writers queue on one lock per database file in this process. SQLite lets
    one writer in at a time, and a writer that finds the database locked sleeps in SQLite's busy handler (1, 2, 5 …
    100 ms between tries), so under a steady stream of small writes most of a request's time went to sleeping
    after the lock was already free. Waiting on a Python lock hands it over at once. The lock is taken at a
    transaction's first write (when pysqlite begins the transaction), or by begin_write_now, and given back at its
    commit, rollback or close."""
    lock = sqlite_write_lock(database)

    class WriteCursor(sqlite3.Cursor):
        def execute(self, sql, parameters=(), /):
            self.connection.before_statement(sql)
            return super().execute(sql, parameters)

        def executemany(self, sql, parameters, /):
            self.connection.before_statement(sql)
            return super().executemany(sql, parameters)

    class SerializedWrites(sqlite3.Connection):
        holds_lock = False

        def cursor(self, factory=WriteCursor):
            return super().cursor(factory)

        def before_statement(self, sql: str) -> None:
            if not self.holds_lock and sql.lstrip()[:7].upper().startswith(_WRITES):
                if not lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_S):
                    raise sqlite3.OperationalError("database is locked")
                self.holds_lock = True

        def begin_write_now(self) -> bool:
            """Begin a write transaction (BEGIN IMMEDIATE) unless another writer holds the database, in this process
            or another; False then. It never waits when the connection's busy timeout is 0 (LoopSqlite's)."""
            if self.holds_lock or not lock.acquire(blocking=False):
                return False
            self.holds_lock = True
            try:
                super().execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:  # another process writes ("database is locked")
                self._release()
                return False
            return True

        def _release(self) -> None:
            if self.holds_lock:
                self.holds_lock = False
                lock.release()

        def commit(self) -> None:
            try:
                super().commit()
            finally:
                self._release()

        def rollback(self) -> None:
            try:
                super().rollback()
            finally:
                self._release()

        def close(self) -> None:
            try:
                super().close()
            finally:
                self._release()

    return SerializedWrites


def make_engine(url: str, **engine_kwargs) -> Engine:
    if "poolclass" not in engine_kwargs and ":memory:" not in url:
        engine_kwargs = {**_pool_kwargs(get_settings()), **engine_kwargs}
    if url.startswith("sqlite"):
        connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S,
                        "factory": serialized_writes(make_url(url).database or "")}
        engine = create_engine(url, connect_args=connect_args, **engine_kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            set_sqlite_pragmas(dbapi_conn)

        return engine
    # A database host that does not answer fails a connection in seconds (a 503), instead of holding the request.
    engine = create_engine(url, connect_args={"connect_timeout": 5}, **engine_kwargs)
    _ping_after_idle(engine)

    @event.listens_for(engine, "do_connect")
    def _named(_dialect, _record, _cargs, cparams) -> None:
        cparams.setdefault("application_name", application_name())

    return engine


def set_sqlite_pragmas(connection: sqlite3.Connection) -> None:
    # WAL lets the API read while a worker writes; foreign keys are off by default in SQLite. synchronous=FULL is
    # SQLite's default: each commit waits for the WAL's fsync, so what was answered survives a power loss (the durable
    # metrics default, as MLflow's commits on SQLite); the relaxed durability's NORMAL skips that fsync (one of ~0.9 ms
    # on a cloud VM's disk) and may lose the last commits on a power loss or an OS crash, never on a crash of Tunelab.
    # SQLite sets it per connection, and connections serve every kind of write: relaxed applies to all of them here.
    synchronous = "FULL" if get_settings().metrics_durability == "durable" else "NORMAL"
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# A pooled PostgreSQL connection that sat unused for this long is pinged before it is handed out.
POOL_PING_AFTER_IDLE_S = 5.0


def _ping_after_idle(engine: Engine) -> None:
    """Hand out no pooled connection that the server has dropped (a restart, an idle timeout, a cut network), as
    pool_pre_ping does, but ping only a connection that sat unused for POOL_PING_AFTER_IDLE_S: pool_pre_ping's
    round trip on every checkout was a fifth of a one-point metrics batch's cost. A connection in steady use that
    breaks fails its statement, and SQLAlchemy then replaces every connection of the pool; one the driver already
    knows is broken is replaced at checkout."""

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection, record) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_connection, record, _proxy) -> None:
        if dbapi_connection.broken or dbapi_connection.closed:
            raise DisconnectionError("the connection is broken")  # the pool connects anew and tries again
        returned_at = record.info.get("returned_at")  # none for a new connection: it just answered
        if returned_at is None or time.monotonic() - returned_at < POOL_PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError(f"the idle connection is gone: {exc}") from exc


@lru_cache
def get_engine() -> Engine:
    return make_engine(get_settings().database_url)


@lru_cache
def get_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(get_engine(), expire_on_commit=False)


@contextmanager
def session_scope() -> Iterator[Session]:
    """A transaction for code outside a request (worker, reaper): commit on success, roll back on error."""
    session = get_sessionmaker()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
