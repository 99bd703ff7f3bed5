"""The metrics fast path's writes, with their own commits: on PostgreSQL one statement on the event loop
(services/metrics.store_at_once) and, when that leaves a batch alone, a transaction on a thread
(commit_external_points, SQLite's only way). They store what a session's ingest stores, in one round trip on
PostgreSQL, and each (key, step) once even when two flushes of a run race."""

import asyncio
import math
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tunelab.db.loop_connections import LoopConnections
from tunelab.db.models.metric import MetricRollup, MetricSummary
from tunelab.db.models.run import Run
from tunelab.db.session import make_engine
from tunelab.services import metrics
from tunelab.services.metrics import Driver
from tunelab.services.runs.run_refs import RunRef


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request) -> Iterator[sa.Engine]:
    url = request.getfixturevalue("migrated_db" if request.param == "sqlite" else "migrated_pg")
    engine = make_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def pg_engine(migrated_pg) -> Iterator[sa.Engine]:
    engine = make_engine(migrated_pg)
    yield engine
    engine.dispose()


def _external_run(engine: sa.Engine) -> RunRef:
    with Session(engine, expire_on_commit=False) as session, session.begin():
        run = Run(project_id=1, name="at-once", objective="sft", method="lora", model="x", config={}, seed=0,
                  queue="cpu", external=True)
        session.add(run)
    return RunRef(run.id, run.project_id, run.external)


def _commit_at_once(engine: sa.Engine, run: RunRef, points: list[metrics.MetricPoint]) -> int:
    """As the fast path stores a batch (api/ingest_fast_path._in_a_slot)."""
    if engine.dialect.name == "postgresql":
        seq = asyncio.run(_store_at_once(engine, run, points))
        if seq is not None:
            return seq
    pooled = engine.raw_connection()
    try:
        return metrics.commit_external_points(Driver(pooled.driver_connection, engine.dialect.name), run, points)
    finally:
        pooled.close()


async def _store_at_once(engine: sa.Engine, run: RunRef, points: list[metrics.MetricPoint]) -> int | None:
    connections = LoopConnections(engine.url.render_as_string(hide_password=False), max_open=1)
    try:
        return await metrics.store_at_once(connections, run, points)
    finally:
        await connections.close()


def _comparable(row) -> tuple:
    return tuple(repr(value) if isinstance(value, float) else value for value in row)  # NaN equals NaN


def _stored(engine: sa.Engine, run_id: int) -> dict:
    """Everything a run's metrics are read from, less the flush numbers (a flush that stored nothing may leave a
    gap in them)."""
    with Session(engine) as session:
        keys = metrics.list_keys(session, run_id)
        return {
            "series": {key: [_comparable(column) for column in metrics.read_points(session, run_id, key)]
                       for key in keys},
            "summaries": [_comparable(row)[1:] for row in session.execute(
                sa.select(*sa.inspect(MetricSummary).columns).where(MetricSummary.run_id == run_id)
                .order_by(MetricSummary.key))],
            "rollups": [_comparable(row)[1:] for row in session.execute(
                sa.select(*sa.inspect(MetricRollup).columns).where(MetricRollup.run_id == run_id)
                .order_by(MetricRollup.key, MetricRollup.cell))],
            "replay": [_comparable(point[1:]) for point in metrics.points_after(session, run_id, 0, 10**6)],
            "eval": session.execute(sa.select(Run.final_eval_loss, Run.best_eval_loss).where(Run.id == run_id)).one(),
        }


def test_a_flush_committed_at_once_stores_what_a_session_flush_stores(engine):
    """Every case of ingest: several keys, steps out of order and repeated within a batch, a retried batch, a
    batch overlapping stored steps, cells spanning flushes, NaN and infinities, eval/loss, and batches of one key
    within one rollup cell."""
    nan_or_not = math.nan if engine.dialect.name == "postgresql" else 7.0  # SQLite drops NaN points either way
    batches = [
        [("train/loss", step, 1.0 / (step + 1), 1.7e9 + step) for step in range(100)]
        + [("train/lr", step, 1e-4, 1.7e9 + step) for step in range(0, 100, 10)],
        [("train/loss", 130, 0.5, 1.0), ("train/loss", 120, nan_or_not, 2.0), ("train/loss", 120, 9.0, 3.0),
         ("train/grad_norm", 120, math.inf, 4.0)],
        [("train/loss", 130, 0.5, 1.0), ("train/loss", 120, nan_or_not, 2.0)],  # retried: nothing new
        [("train/loss", step, -1.0, 5.0) for step in range(95, 140)],  # overlaps: only 100…119 and 121…129, 131…
        [("eval/loss", 100, 2.5, 6.0), ("train/loss", 140, 0.25, 6.0)],
        [("eval/loss", 200, 2.0, 7.0), ("train/loss", 200, -math.inf, 7.0)],
        # One key within one rollup cell, as a point per request: PostgreSQL's one-row statement.
        [("train/loss", 201, 0.125, 8.0)],
        [("train/loss", 203, 0.5, 9.0), ("train/loss", 202, nan_or_not, 9.0), ("train/loss", 203, 7.0, 9.0)],
        [("train/loss", 202, 3.0, 10.0)],  # retried: nothing new
        [("train/new", 0, 1.0, 11.0)],  # a key's first point: new summary and rollup rows
        [("train/loss", 256, 0.0625, 12.0)],  # the next rollup cell
        [("eval/loss", 150, 0.5, 13.0)],  # between stored evals: the best follows it, the final stays step 200's
        # Later evals worse than the best: the final follows them, the best stays; then one alone, as a Trainer logs.
        [("train/loss", 300, 0.5, 14.0), ("eval/loss", 300, nan_or_not, 14.0), ("eval/loss", 310, 1.5, 14.5)],
        [("eval/loss", 320, 1.875, 15.0)],
    ]
    by_session, at_once = _external_run(engine), _external_run(engine)
    for batch in batches:
        with Session(engine) as session, session.begin():
            metrics.ingest_external_points(session, by_session, batch)
        _commit_at_once(engine, at_once, batch)

    expected = _stored(engine, by_session.id)
    assert list(expected["series"]["train/loss"][0]) == [*range(141), 200, 201, 202, 203, 256, 300]
    assert expected["eval"] == (1.875, 0.5)
    assert _stored(engine, at_once.id) == expected


class _Relay:
    """A TCP relay between asyncpg and PostgreSQL that notes the type of every protocol message each side sends
    while `recording`: (sender, type) pairs, e.g. ("server", "Z") for ReadyForQuery, one per round trip."""

    def __init__(self, url: sa.URL) -> None:
        self.upstream = (url.host, url.port or 5432)
        self.recording = False
        self.messages: list[tuple[str, str]] = []
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self._server.close()

    async def _serve(self, client_reader, client_writer) -> None:
        server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        await asyncio.gather(self._pipe(client_reader, server_writer, "client", untyped_first=True),
                             self._pipe(server_reader, client_writer, "server", untyped_first=False))

    async def _pipe(self, reader, writer, sender: str, untyped_first: bool) -> None:
        pending = b""
        while data := await reader.read(65536):
            writer.write(data)
            pending += data
            while True:
                if untyped_first:  # the startup message: a length, no type
                    if len(pending) < 4 or len(pending) < int.from_bytes(pending[:4], "big"):
                        break
                    pending, untyped_first = pending[int.from_bytes(pending[:4], "big"):], False
                    continue
                if len(pending) < 5 or len(pending) < 1 + int.from_bytes(pending[1:5], "big"):
                    break
                if self.recording:
                    self.messages.append((sender, chr(pending[0])))
                pending = pending[1 + int.from_bytes(pending[1:5], "big"):]
        writer.close()


def _one_point(step: int) -> list[metrics.MetricPoint]:
    return [("train/loss", step, 1.0 / (step + 1), float(step))]


def _an_eval_step(step: int) -> list[metrics.MetricPoint]:
    """As a Trainer logs an eval step."""
    return [*_one_point(step), ("train/lr", step, 1e-4, float(step)), ("eval/loss", step, 1.0 + step, float(step))]


@pytest.mark.parametrize("batch", [_one_point, _an_eval_step], ids=["one point", "with eval/loss"])
def test_a_flush_on_postgresql_is_one_round_trip(pg_engine, batch):
    """No BEGIN, no COMMIT, no ping of a connection used a moment ago, no statement prepared again: one statement,
    answered once, with eval/loss in the batch too."""
    run = _external_run(pg_engine)

    async def two_flushes() -> tuple[int | None, list[tuple[str, str]]]:
        relay = _Relay(pg_engine.url)
        await relay.start()
        through_relay = pg_engine.url.set(host="127.0.0.1", port=relay.port, query={"sslmode": "disable"})
        connections = LoopConnections(through_relay.render_as_string(hide_password=False), max_open=1)
        try:
            await metrics.store_at_once(connections, run, batch(0))
            relay.recording = True
            seq = await metrics.store_at_once(connections, run, batch(1))
            relay.recording = False
            return seq, relay.messages
        finally:
            await connections.close()
            await relay.stop()

    seq, messages = asyncio.run(two_flushes())

    assert [kind for sender, kind in messages if sender == "server"].count("Z") == 1  # ReadyForQuery
    assert ("client", "Q") not in messages  # a simple query: BEGIN, COMMIT or a ping
    assert ("client", "P") not in messages  # Parse: the statement is prepared once per connection
    assert seq == 2
    with Session(pg_engine) as session:
        assert metrics.read_points(session, run.id, "train/loss")[0] == [0, 1]
        evals = session.execute(sa.select(Run.final_eval_loss, Run.best_eval_loss).where(Run.id == run.id)).one()
    assert tuple(evals) == ((2.0, 1.0) if batch is _an_eval_step else (None, None))


@pytest.mark.parametrize("writer", ["at once", "store_points"])
def test_a_flush_that_waited_for_another_of_its_run_stores_each_step_once(pg_engine, writer):
    """An SDK's retry may reach the API while its first try is still being stored: the second flush waits for the
    run's row lock and then must see what the first one committed meanwhile."""
    run = _external_run(pg_engine)
    first = [("train/loss", step, 1.0, 0.0) for step in range(10)]
    retry = [("train/loss", step, 2.0, 0.0) for step in range(5, 15)]

    def store_retry() -> None:
        if writer == "at once":
            _commit_at_once(pg_engine, run, retry)
            return
        pooled = pg_engine.raw_connection()
        try:
            metrics.store_points(Driver(pooled.driver_connection, "postgresql"), run.id, retry, remembered=run)
            pooled.commit()
        finally:
            pooled.close()

    holder = pg_engine.raw_connection()
    try:
        metrics.store_points(Driver(holder.driver_connection, "postgresql"), run.id, first, remembered=run)
        waiter = threading.Thread(target=store_retry)
        waiter.start()
        deadline = time.monotonic() + 60
        # In autocommit: PostgreSQL keeps one view of pg_stat_activity for a whole transaction.
        with pg_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
            while not watcher.execute(sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'")).scalar_one():
                assert time.monotonic() < deadline, "the second flush never waited for the run's row lock"
                time.sleep(0.01)
        holder.commit()
    finally:
        holder.close()
    waiter.join(timeout=60)

    with Session(pg_engine) as session:
        steps, values, _ = metrics.read_points(session, run.id, "train/loss")
        summary = session.get(MetricSummary, (run.id, "train/loss"))
    assert list(steps) == list(range(15))
    assert list(values) == [1.0] * 10 + [2.0] * 5
    assert (summary.count, summary.last_step) == (15, 14)
