"""Durable by default: on PostgreSQL a metrics batch commits with the server's synchronous_commit (on), so a 200
means the points survive a database crash; only TUNELAB_METRICS_DURABILITY=relaxed lets commits skip the WAL flush.
Both write paths are read through the connection that stored the batch: the event loop's (the fast path's one
statement) and a session's (the route's, the fast path's thread and the training process's)."""

import asyncio
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tunelab.core.settings import Settings, get_settings
from tunelab.db.loop_connections import LoopConnections, LoopSqlite
from tunelab.db.models.run import Run
from tunelab.db.session import make_engine
from tunelab.services import metrics
from tunelab.services.runs.run_refs import RunRef


@pytest.fixture(params=["durable", "relaxed"])
def durability(request, monkeypatch) -> Iterator[str]:
    """The setting on the process's settings; durable is the default. Set on the cached object, not by clearing the
    cache: a new Settings object would part the session's `settings` fixture from what the app reads for every later
    test."""
    monkeypatch.setattr(get_settings(), "metrics_durability", request.param)
    yield request.param


def test_durable_is_the_default():
    assert Settings.model_fields["metrics_durability"].default == "durable"


@pytest.mark.parametrize(("setting", "synchronous"), [("durable", 2), ("relaxed", 1)])  # FULL, NORMAL
def test_sqlite_commits_wait_for_the_fsync_unless_relaxed(tmp_path, monkeypatch, setting, synchronous):
    """A session's connection and the event loop's (the fast path's) both; SQLite's own default is FULL."""
    monkeypatch.setattr(get_settings(), "metrics_durability", setting)
    engine = make_engine(f"sqlite:///{tmp_path / 'durability.db'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar_one() == synchronous
    finally:
        engine.dispose()

    loop_sqlite = LoopSqlite(str(tmp_path / "durability.db"))
    try:
        with loop_sqlite.write_now() as connection:
            assert connection is not None
            assert connection.execute("PRAGMA synchronous").fetchone()[0] == synchronous
    finally:
        loop_sqlite.close()


@pytest.fixture
def pg_engine(migrated_pg) -> Iterator[sa.Engine]:
    engine = make_engine(migrated_pg)
    yield engine
    engine.dispose()


def _expected(durability: str, engine: sa.Engine) -> str:
    with engine.connect() as connection:
        server_default = connection.execute(
            sa.text("SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'")).scalar_one()
    assert server_default == "on"  # PostgreSQL's own default, which the durable mode leaves as it is
    return server_default if durability == "durable" else "off"


def _external_run(engine: sa.Engine) -> RunRef:
    with Session(engine, expire_on_commit=False) as session, session.begin():
        run = Run(project_id=1, name="durability", objective="sft", method="lora", model="x", config={}, seed=0,
                  queue="cpu", external=True)
        session.add(run)
    return RunRef(run.id, run.project_id, run.external)


@pytest.mark.postgres
def test_the_event_loops_statement_commits_as_the_setting_says(pg_engine, migrated_pg, durability):
    run = _external_run(pg_engine)

    async def store_then_show() -> tuple[int | None, str]:
        connections = LoopConnections(migrated_pg, max_open=1)  # one connection: the one that stored the batch
        try:
            seq = await metrics.store_at_once(connections, run, [("train/loss", 0, 1.0, 0.0)])
            async with connections.connection() as connection:
                return seq, await connection.fetchval("SHOW synchronous_commit")
        finally:
            await connections.close()

    seq, synchronous_commit = asyncio.run(store_then_show())

    assert seq == 1  # stored by the one statement, not left to the thread
    assert synchronous_commit == _expected(durability, pg_engine)


@pytest.mark.postgres
def test_a_sessions_ingest_commits_as_the_setting_says(pg_engine, durability):
    run = _external_run(pg_engine)
    with Session(pg_engine) as session:
        metrics.ingest_points(session, run.id, [("train/loss", 0, 1.0, 0.0), ("eval/loss", 0, 2.0, 0.0)])
        synchronous_commit = session.execute(sa.text("SHOW synchronous_commit")).scalar_one()  # still its transaction
        session.commit()

    assert synchronous_commit == _expected(durability, pg_engine)
    with Session(pg_engine) as session:
        assert metrics.list_keys(session, run.id) == ["eval/loss", "train/loss"]
