"""The SQLite connection the metrics fast path writes with on the event loop never waits for another writer."""

import asyncio
import sqlite3
import time

from sqlalchemy import make_url

from tunelab.db.loop_connections import LoopSqlite
from tunelab.db.session import SQLITE_BUSY_TIMEOUT_S, make_engine


def test_a_write_on_the_loop_is_refused_at_once_while_another_writer_holds_the_database(migrated_db):
    database = make_url(migrated_db).database
    loop_sqlite = LoopSqlite(database)
    engine = make_engine(migrated_db)  # writers of this process: they queue on the same lock (serialized_writes)
    for holder in ("another process", "this process"):
        if holder == "another process":
            other = sqlite3.connect(database, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
        else:
            other = engine.raw_connection()
            other.cursor().execute("UPDATE run SET name = name WHERE id = -1")
        try:
            started = time.monotonic()
            with loop_sqlite.write_now() as connection:
                refused, waited = connection is None, time.monotonic() - started
        finally:
            other.rollback()
            other.close()
        assert refused, holder
        assert waited < SQLITE_BUSY_TIMEOUT_S / 2, f"it waited for {holder}'s writer"

    with loop_sqlite.write_now() as connection:  # nobody else writes now
        connection.execute("UPDATE run SET name = name WHERE id = -1")
    assert loop_sqlite.commits == 1
    loop_sqlite.close()
    engine.dispose()


def test_the_wal_stays_small_though_the_loop_connection_never_checkpoints_itself(tmp_path, monkeypatch):
    """A thread checkpoints every CHECKPOINT_EVERY commits, so that SQLite starts the WAL over: without that, the WAL
    of a database only the loop writes would grow by every page written."""
    database = str(tmp_path / "loop.db")
    with sqlite3.connect(database) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE blob (data BLOB)")
    monkeypatch.setattr(LoopSqlite, "CHECKPOINT_EVERY", 5)
    loop_sqlite = LoopSqlite(database)
    writes, page = 200, 4096

    async def write() -> None:
        while loop_sqlite.commits < writes:
            with loop_sqlite.write_now() as connection:
                if connection is not None:  # None while a checkpoint holds the writers back (the fast path: a thread)
                    assert connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
                    connection.execute("INSERT INTO blob VALUES (randomblob(3000))")
            await asyncio.sleep(0)

    asyncio.run(write())
    loop_sqlite.close()

    assert loop_sqlite.commits == writes
    assert (tmp_path / "loop.db-wal").stat().st_size < writes * page / 2
