"""Server CPU of metric ingest, per point and per request, measured on the API process (and its PostgreSQL backends).

    python scripts/bench_ingest_cost.py --backend sqlite
    python scripts/bench_ingest_cost.py --backend postgres

Starts the API on a fresh database (as scripts/bench_metrics.py does), logs with an API token, and reads the CPU
time the server process spent (psutil, user + system) around two workloads sent by one client:
- 1,000 points per request: µs of server CPU per point;
- 1 point per request: µs of server CPU per request, the fixed cost (auth, routing, parsing, the transaction).
On PostgreSQL the CPU of the database backends serving the API is added (pg_stat_activity by database name).
The client's own CPU is not counted, and bodies are encoded before the clock starts.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psutil
import sqlalchemy as sa
from sqlalchemy.orm import Session

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "backend"))

from bench_auth import admin_token, bearer  # noqa: E402

from tunelab.db.migrate import upgrade  # noqa: E402
from tunelab.db.models.run import Run  # noqa: E402
from tunelab.db.session import make_engine  # noqa: E402

SERVER_START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Database:
    """A fresh database for one benchmark, removed afterwards."""

    def __init__(self, backend: str, pg_admin_url: str, workdir: Path) -> None:
        self.backend = backend
        self.pg_admin_url = pg_admin_url
        if backend == "sqlite":
            self.path = workdir / "bench.db"
            self.url = f"sqlite:///{self.path}"
        else:
            self.name = f"tunelab_bench_{uuid.uuid4().hex[:10]}"
            self.url = pg_admin_url.rsplit("/", 1)[0] + f"/{self.name}"
            self._admin(f'CREATE DATABASE "{self.name}"')
        upgrade(self.url)
        self.engine = make_engine(self.url)

    def _admin(self, statement: str) -> None:
        admin = sa.create_engine(self.pg_admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sa.text(statement))
        admin.dispose()

    def create_runs(self, count: int) -> list[int]:
        runs = [
            Run(project_id=1, name=f"bench-{i}", objective="sft", method="lora", model="x", config={}, seed=i,
                queue="cpu", external=True)
            for i in range(count)
        ]
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            session.add_all(runs)
        return [run.id for run in runs]

    def stored_bytes(self) -> int:
        """Bytes the metric history occupies (SQLite: the whole file after a WAL checkpoint)."""
        if self.backend == "sqlite":
            with self.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            wal = Path(f"{self.path}-wal")
            return self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        with self.engine.connect() as connection:
            return connection.execute(sa.text("SELECT pg_total_relation_size('metric')")).scalar_one()

    def close(self) -> None:
        self.engine.dispose()
        if self.backend == "postgres":
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def start_server(database_url: str, data_dir: Path, port: int, command: list[str] | None = None,
                 extra_env: dict[str, str] | None = None, output=None) -> subprocess.Popen:
    """The API on a fresh database, answering on `port`: quiet uvicorn, or `command` (e.g. `tunelab api`)."""
    env = {**os.environ, "TUNELAB_DATABASE_URL": database_url, "TUNELAB_DATA_DIR": str(data_dir), **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT / "backend"), env.get("PYTHONPATH")]))
    server = subprocess.Popen(
        command or [sys.executable, "-m", "uvicorn", "tunelab.main:create_app", "--factory",
                    "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"],
        env=env, stdout=output, stderr=subprocess.STDOUT if output is not None else None,
    )
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the API exited with {server.returncode}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=1).raise_for_status()
            return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.terminate()
    raise RuntimeError("the API did not answer in time")




def _backend_pids(database: Database) -> list[int]:
    if database.backend != "postgres":
        return []
    with database.engine.connect() as connection:
        return list(connection.execute(
            sa.text("SELECT pid FROM pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()"),
            {"name": database.name}).scalars())


def _cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _bodies(run_id: int, requests: int, points_per_request: int) -> list[tuple[int, bytes]]:
    bodies = []
    for request in range(requests):
        first = request * points_per_request
        points = [{"key": "train/loss", "step": step, "value": 1.0 / (step + 1), "wall_time": 1.7e9 + step}
                  for step in range(first, first + points_per_request)]
        bodies.append((run_id, json.dumps({"points": points}).encode()))
    return bodies


def measure(client: httpx.Client, database: Database, server: psutil.Process,
            bodies: list[tuple[int, bytes]]) -> tuple[float, float, float]:
    """(API process CPU s, database backends' CPU s, wall s) to send `bodies` one after another."""
    # Warm: the first requests open connections and fill caches, which is not the steady cost.
    for run_id, body in bodies[:20]:
        client.post(f"/api/v1/runs/{run_id}/metrics", content=body).raise_for_status()
    api_pids = [server.pid, *(child.pid for child in server.children(recursive=True))]
    db_pids = _backend_pids(database)
    api_before, db_before, wall_before = _cpu_s(api_pids), _cpu_s(db_pids), time.perf_counter()
    for run_id, body in bodies[20:]:
        client.post(f"/api/v1/runs/{run_id}/metrics", content=body).raise_for_status()
    return _cpu_s(api_pids) - api_before, _cpu_s(db_pids) - db_before, time.perf_counter() - wall_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    parser.add_argument("--pg-admin-url", default=os.environ.get(
        "TUNELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    # Redis carries the revocations that let the API remember credentials: without it every request reads them.
    parser.add_argument("--redis-url", default=os.environ.get("TUNELAB_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--big-requests", type=int, default=200)
    parser.add_argument("--small-requests", type=int, default=2000)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tunelab-cost-"))
    database = Database(args.backend, args.pg_admin_url, workdir)
    server = None
    try:
        big_run, small_run = database.create_runs(2)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        server = start_server(database.url, workdir, port,
                              extra_env={"TUNELAB_REDIS_URL": args.redis_url,
                                         "TUNELAB_REDIS_NAMESPACE": f"bench-{uuid.uuid4().hex[:8]}"})
        headers = {**bearer(admin_token(base_url)), "content-type": "application/json"}
        big = _bodies(big_run, args.big_requests + 20, 1000)
        small = _bodies(small_run, args.small_requests + 20, 1)
        with httpx.Client(base_url=base_url, timeout=60, headers=headers) as client:
            process = psutil.Process(server.pid)
            big_api, big_db, big_wall = measure(client, database, process, big)
            small_api, small_db, small_wall = measure(client, database, process, small)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        database.close()

    big_points = args.big_requests * 1000
    split = args.backend == "postgres"

    def figures(api_s: float, db_s: float, per: float, unit: float) -> str:
        total = f"{(api_s + db_s) / per * unit:7.2f}"
        return f"{total} (API {api_s / per * unit:.2f} + PostgreSQL {db_s / per * unit:.2f})" if split else total

    print(f"\nTunelab ingest cost on {args.backend}, server CPU (API process{' + its PostgreSQL backends' if split else ''})")
    print(f"  1,000 pts/request: {figures(big_api, big_db, big_points, 1e6)} µs/point, "
          f"{big_points / big_wall:,.0f} pts/s wall")
    print(f"  1 pt/request:      {figures(small_api, small_db, args.small_requests, 1e3)} ms/request, "
          f"{args.small_requests / small_wall:,.0f} req/s wall")


if __name__ == "__main__":
    main()
