"""Benchmark the metrics hot path through the real HTTP API against a fresh database.

    python scripts/bench_metrics.py --backend sqlite
    python scripts/bench_metrics.py --backend postgres [--pg-admin-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

Starts uvicorn on a free loopback port, creates runs directly in SQL (the runs API is not needed), then measures
ingest (20 runs × 20,000 steps × 3 keys in batches of 1,000 points over 2 connections), the storage cost per
point, a full read of a 100,000-point series, and a 10-run compare read at 1,000 points per run.

It prints Tunelab's own figures only: a ratio against MLflow means running MLflow beside Tunelab on the same
workload in the same run, never dividing by a figure measured another day.
"""

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy.orm import Session

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "backend"))

from bench_auth import admin_token, bearer  # noqa: E402

from tunelab.db.migrate import upgrade  # noqa: E402
from tunelab.db.models.run import Run  # noqa: E402
from tunelab.db.session import make_engine  # noqa: E402

KEYS = ("train/loss", "train/learning_rate", "train/grad_norm")
CONNECTIONS = 2  # the machine has two cores; the server needs one
SERVER_START_TIMEOUT_S = 60
READ_REPEATS = 5


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


def batches_of_run(run_id: int, steps: int, batch_points: int):
    """The run's points as the trainer would flush them: every key at each step, in step order."""
    steps_per_batch = max(1, batch_points // len(KEYS))
    rng = random.Random(run_id)
    wall_start = time.time()
    for first in range(0, steps, steps_per_batch):
        points = [
            {"key": key, "step": step, "value": rng.random(), "wall_time": wall_start + step * 0.05}
            for step in range(first, min(first + steps_per_batch, steps))
            for key in KEYS
        ]
        yield json.dumps({"points": points}).encode()


def post_all(base_url: str, headers: dict[str, str], requests: list[tuple[int, bytes]]) -> int:
    points = 0
    with httpx.Client(base_url=base_url, timeout=60, headers=headers) as client:
        for run_id, body in requests:
            response = client.post(
                f"/api/v1/runs/{run_id}/metrics", content=body, headers={"content-type": "application/json"}
            )
            response.raise_for_status()
            points += response.json()["accepted"]
    return points


def timed(call, repeats: int) -> float:
    """Median seconds of `repeats` calls."""
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    parser.add_argument("--pg-admin-url", default=os.environ.get(
        "TUNELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--batch-points", type=int, default=1000)
    parser.add_argument("--long-series-points", type=int, default=100_000)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tunelab-bench-"))
    database = Database(args.backend, args.pg_admin_url, workdir)
    server = None
    try:
        run_ids = database.create_runs(args.runs + 1)
        ingest_runs, long_run = run_ids[:-1], run_ids[-1]
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        server = start_server(database.url, workdir, port)
        # Scripts log with an API token, as external logging would; the admin owns `default`, where the runs are.
        headers = bearer(admin_token(base_url))
        bytes_before = database.stored_bytes()

        # Bodies are encoded before the clock starts: the figure is the server's, not the client's JSON encoder's.
        shares = [
            [(run_id, body) for run_id in ingest_runs[i::CONNECTIONS]
             for body in batches_of_run(run_id, args.steps, args.batch_points)]
            for i in range(CONNECTIONS)
        ]
        start = time.perf_counter()
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            points = sum(pool.map(lambda share: post_all(base_url, headers, share), shares))
        ingest_s = time.perf_counter() - start
        bytes_per_point = (database.stored_bytes() - bytes_before) / points

        with httpx.Client(base_url=base_url, timeout=120, headers=headers) as client:
            long_key = "eval/long"
            for first in range(0, args.long_series_points, 10_000):
                batch = [{"key": long_key, "step": step, "value": random.random(), "wall_time": 1.7e9 + step}
                         for step in range(first, min(first + 10_000, args.long_series_points))]
                client.post(f"/api/v1/runs/{long_run}/metrics", json={"points": batch}).raise_for_status()

            def full_read() -> None:
                response = client.get(f"/api/v1/runs/{long_run}/metrics",
                                      params={"keys": long_key, "max_points": args.long_series_points})
                response.raise_for_status()
                assert len(response.json()["series"][0]["step"]) == args.long_series_points

            def compare_read() -> None:
                response = client.post("/api/v1/metrics/query",
                                       json={"run_ids": ingest_runs[:10], "keys": [KEYS[0]], "max_points": 1000})
                response.raise_for_status()
                assert all(len(run["series"][0]["step"]) <= 1000 for run in response.json()["data"])

            full_read_s = timed(full_read, READ_REPEATS)
            compare_s = timed(compare_read, READ_REPEATS)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        database.close()

    ingest_rate = points / ingest_s
    rows = [
        ("ingest (points/s)", f"{ingest_rate:,.0f}"),
        (f"read {args.long_series_points:,}-point series (s)", f"{full_read_s:.3f}"),
        ("compare 10 runs @1,000 points (s)", f"{compare_s:.3f}"),
        ("storage (bytes/point)", f"{bytes_per_point:.1f}"),
    ]
    print(f"\nTunelab metrics on {args.backend}: {points:,} points ingested in {ingest_s:.1f} s")
    header = ("measure", "Tunelab")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))

if __name__ == "__main__":
    main()
