"""The PostgreSQL pool, and the metrics fast path's connections on the event loop, hand out no connection the server
dropped, though they ping only connections that sat idle (a connection used a moment ago is not pinged:
tests/api/test_metrics_commit_at_once.py)."""

import asyncio

import pytest
import sqlalchemy as sa

from tunelab.db import loop_connections
from tunelab.db import session as db_session
from tunelab.db.session import make_engine

pytestmark = pytest.mark.postgres


def test_a_pooled_connection_the_server_dropped_while_idle_is_replaced_before_it_is_handed_out(migrated_pg,
                                                                                               monkeypatch):
    engine = make_engine(migrated_pg)
    try:
        with engine.connect() as connection:
            dropped = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        _terminate(migrated_pg, dropped)
        monkeypatch.setattr(db_session, "POOL_PING_AFTER_IDLE_S", 0.0)  # "idle" at once, instead of waiting 5 s

        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() not in (dropped, None)
    finally:
        engine.dispose()


def test_an_idle_loop_connection_the_server_dropped_is_replaced_before_it_is_used(migrated_pg, monkeypatch):
    """The metrics fast path's own connections (db/loop_connections), as the pool's."""
    monkeypatch.setattr(db_session, "POOL_PING_AFTER_IDLE_S", 0.0)

    async def pid_after_the_first_is_dropped() -> tuple[int, int]:
        connections = loop_connections.LoopConnections(migrated_pg, max_open=1)
        try:
            async with connections.connection() as connection:
                dropped = await connection.fetchval("SELECT pg_backend_pid()")
            _terminate(migrated_pg, dropped)
            async with connections.connection() as connection:
                return dropped, await connection.fetchval("SELECT pg_backend_pid()")
        finally:
            await connections.close()

    dropped, used = asyncio.run(pid_after_the_first_is_dropped())
    assert used != dropped


def _terminate(url: str, backend_pid: int) -> None:
    admin = sa.create_engine(url, poolclass=sa.NullPool)
    with admin.connect() as connection:
        terminated = connection.execute(sa.text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": backend_pid})
        assert terminated.scalar_one()
    admin.dispose()
