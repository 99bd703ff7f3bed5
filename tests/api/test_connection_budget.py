"""A connection budget: TUNELAB_DB_MAX_CONNECTIONS bounds the PostgreSQL connections one process opens, its SQL pool
with the overflow and the event loop's connections for metrics batches together, so that PostgreSQL's
max_connections can be sized for N API processes and M workers. The pool and the loop's share are derived from it;
explicit pool settings past it are refused at start-up."""

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
import sqlalchemy as sa
from pydantic import ValidationError

from tests.conftest import PG_ADMIN_URL, ApiProcess, _unavailable, first_admin_tokens, fresh_install
from tunelab.core.settings import Settings
from tunelab.db.loop_connections import LoopConnections

API = "/api/v1"
BUDGET = 8  # well under what one API process opened before (pool 20 + overflow 10 + a loop connection per thread)


@pytest.mark.parametrize("budget", [2, 5, 8, 24, 60])
def test_the_pool_and_the_loops_connections_are_derived_within_the_budget(budget):
    settings = Settings(db_max_connections=budget)

    assert settings.pool_size + settings.pool_overflow + settings.db_loop_connections <= budget
    assert settings.pool_size >= 1 and settings.db_loop_connections >= 1
    # No more requests hold a transaction than the pool has connections for, beside the live reads and the reaper.
    assert settings.db_slots <= max(1, settings.pool_size + settings.pool_overflow - settings.live_read_threads - 2)


def test_pool_settings_past_the_budget_are_refused_at_start_up():
    with pytest.raises(ValidationError, match="TUNELAB_DB_MAX_CONNECTIONS"):
        Settings(db_max_connections=24, db_pool_size=20, db_max_overflow=10)
    with pytest.raises(ValidationError, match="TUNELAB_DB_MAX_CONNECTIONS"):
        Settings(db_max_connections=10, db_max_overflow=10)


@pytest.mark.postgres
def test_the_event_loop_opens_no_more_connections_than_its_share(migrated_pg):
    """Ten batches at once on a share of two: the others wait on the loop for a connection, none opens a third."""
    async def ten_at_once() -> set[int]:
        connections = LoopConnections(migrated_pg, max_open=2)

        async def one_batch() -> int:
            async with connections.connection() as connection:
                backend = await connection.fetchval("SELECT pg_backend_pid()")
                await asyncio.sleep(0.02)  # still in use while the others ask
                return backend

        try:
            return set(await asyncio.gather(*(one_batch() for _ in range(10))))
        finally:
            await connections.close()

    assert len(asyncio.run(ten_at_once())) == 2


@pytest.fixture
def database() -> Iterator[str]:
    """A PostgreSQL database of this test's own, whose connections are all the API's."""
    try:
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        name = f"tunelab_budget_{uuid.uuid4().hex[:10]}"
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001  (any failure to reach the server means "unavailable")
        _unavailable("PostgreSQL", str(exc).splitlines()[0])
    try:
        yield name
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class ConnectionCounter:
    """Samples pg_stat_activity for the database's client connections (from another database), every few ms."""

    def __init__(self, database: str) -> None:
        self._database = database
        self._meter = psycopg.connect(sa.make_url(PG_ADMIN_URL).set(drivername="postgresql")
                                      .render_as_string(hide_password=False), autocommit=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.most = 0
        self.names: set[str] = set()

    def _sample(self) -> None:
        while not self._stop.is_set():
            names = [row[0] for row in self._meter.execute(
                "SELECT application_name FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
                (self._database,))]
            self.most, self.names = max(self.most, len(names)), self.names | set(names)
            self._stop.wait(0.005)

    def __enter__(self) -> "ConnectionCounter":
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()
        self._meter.close()


@pytest.mark.postgres
def test_an_api_process_under_load_holds_its_connections_to_the_budget(database, assets, redis_url, tmp_path):
    url = sa.make_url(PG_ADMIN_URL).set(database=database).render_as_string(hide_password=False)
    env = fresh_install(tmp_path, assets, "budget", TUNELAB_DATABASE_URL=url, TUNELAB_DB_MAX_CONNECTIONS=str(BUDGET))
    server = ApiProcess(tmp_path / "api.log", env)
    try:
        headers = {"Authorization": f"Bearer {first_admin_tokens(server.base_url, 'budget')[0]['token']}"}
        with httpx.Client(base_url=server.base_url + API, headers=headers, timeout=60,
                          limits=httpx.Limits(max_connections=16)) as http:
            runs = [http.post("/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True})
                    .raise_for_status().json()["id"] for _ in range(4)]

            def client(number: int) -> list[int]:
                """Ingest on both paths (one point: the event loop's one statement; with eval/loss: a thread and
                the pool) and reads (the pool)."""
                run, statuses = runs[number % len(runs)], []
                for step in range(number * 1000, number * 1000 + 12):
                    points = [{"key": "train/loss", "step": step, "value": 1.0}]
                    if step % 5 == 0:
                        points.append({"key": "eval/loss", "step": step, "value": 2.0})
                    statuses.append(http.post(f"/runs/{run}/metrics", json={"points": points}).status_code)
                    if step % 3 == 0:
                        statuses.append(http.get(f"/runs/{run}/metrics").status_code)
                        statuses.append(http.get("/runs").status_code)
                return statuses

            with ConnectionCounter(database) as counter, ThreadPoolExecutor(16) as pool:
                started = time.monotonic()
                statuses = [status for result in pool.map(client, range(16)) for status in result]
                took = time.monotonic() - started
    finally:
        server.stop()

    assert set(statuses) == {200}, sorted(set(statuses))
    assert counter.names == {f"tunelab api {server.proc.pid}"}  # every connection named for its process
    assert 2 <= counter.most <= BUDGET, (counter.most, f"{len(statuses)} requests in {took:.1f} s")
    log = (tmp_path / "api.log").read_text()
    assert re.search(rf"at most {BUDGET} database connections per process \(SQL pool \d+ \+ overflow \d+ \+ the "
                     r"API's event loop \d+\)", log), log[-2000:]
