"""A fresh Tunelab API for the benchmarks that measure Tunelab alone (bench_live, bench_queue, bench_ingest_cost): a
database of its own (SQLite file or a new PostgreSQL database, removed afterwards) and the API started on it.
bench_metrics, which starts MLflow beside Tunelab, runs the real `tunelab api` command instead."""

import argparse
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy.orm import Session

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "backend"))

from tunelab.db.migrate import upgrade  # noqa: E402
from tunelab.db.models.run import Run  # noqa: E402
from tunelab.db.session import make_engine  # noqa: E402

SERVER_START_TIMEOUT_S = 60


def add_database_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend, --pg-admin-url and --redis-url, as every benchmark on a fresh Tunelab takes them."""
    parser.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    parser.add_argument("--pg-admin-url", default=os.environ.get(
        "TUNELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--redis-url", default=os.environ.get("TUNELAB_REDIS_URL", "redis://127.0.0.1:6379/0"))


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
        """Bytes the metric history occupies, its rollups and summaries included (SQLite: the whole file after a WAL
        checkpoint)."""
        if self.backend == "sqlite":
            with self.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            wal = Path(f"{self.path}-wal")
            return self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        with self.engine.connect() as connection:
            return connection.execute(sa.text(
                "SELECT pg_total_relation_size('metric_chunk') + pg_total_relation_size('metric_rollup') "
                "+ pg_total_relation_size('metric_summary')")).scalar_one()

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
