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
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psutil
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_auth import admin_token, bearer  # noqa: E402
from bench_tunelab import Database, add_database_arguments, free_port, start_server  # noqa: E402


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
    # Redis carries the revocations that let the API remember credentials: without it every request reads them.
    add_database_arguments(parser)
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
