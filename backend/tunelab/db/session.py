"""Engine and session factory, one per process, built from settings."""

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from tunelab.core.settings import Settings, get_settings


def _pool_kwargs(settings: Settings) -> dict:
    """A connection for each thread that can use one (Settings.pool_size): no more requests hold a transaction than
    there are API threads (db_slots, api/deps.py), so none waits for a connection; the overflow is for sessions
    opened outside requests. A wait longer than db_pool_timeout_s fails (503) instead of stalling."""
    return {"pool_size": settings.pool_size, "max_overflow": settings.db_max_overflow,
            "pool_timeout": settings.db_pool_timeout_s}


SQLITE_BUSY_TIMEOUT_S = 30.0
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


def _serialized_writes() -> type[sqlite3.Connection]:
    """A pysqlite connection class whose writers queue on one lock per engine. SQLite lets one writer in at a
    time, and a writer that finds the database locked sleeps in SQLite's busy handler (1, 2, 5 … 100 ms between
    tries), so under a steady stream of small writes most of a request's time went to sleeping after the lock was
    already free. Waiting on a Python lock hands it over at once. The lock is taken at a transaction's first write
    (when pysqlite begins the transaction) and given back at its commit, rollback or close."""
    lock = threading.Lock()

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
        connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S, "factory": _serialized_writes()}
        engine = create_engine(url, connect_args=connect_args, **engine_kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            # WAL lets the API read while a worker writes; foreign keys are off by default in SQLite.
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    # A database host that does not answer fails a connection in seconds (a 503), instead of holding the request.
    return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 5}, **engine_kwargs)


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
