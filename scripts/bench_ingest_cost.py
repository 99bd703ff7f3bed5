"""Server CPU of metric ingest, per point and per request, measured on the API process (and its PostgreSQL backends).

    python scripts/bench_ingest_cost.py --backend sqlite
    python scripts/bench_ingest_cost.py --backend postgres

Starts the API on a fresh database (as scripts/bench_metrics.py does), logs with an API token, and reads the CPU
time the server process spent (psutil, user + system) around two workloads sent by one client:
- 1,000 points per request: µs of server CPU per point;
- 1 point per request: µs of server CPU per request, the fixed cost (auth, routing, parsing, the transaction).
Points come as a Trainer logs them: train/loss and train/learning_rate at every step, eval/loss every 100 steps.
On PostgreSQL the CPU of the database backends serving the API is added (pg_stat_activity by database name), with
the WAL written per point (the cluster's WAL position before and after: run it on a quiet server), and a profile of
the one statement a batch is stored by (services/metrics.at_once_statement), after the API's workloads on a run of
its own: the wall time of each execution on one connection (its commit included), then EXPLAIN (ANALYZE, BUFFERS,
WAL) of one more, which executes it too: planning, each part's time and the buffers and WAL it touched.
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


EVAL_EVERY = 100


def trainer_points(count: int) -> list[tuple[str, int, float, float]]:
    """The first `count` points of a run as a Trainer logs them: (key, step, value, wall time)."""
    points: list[tuple[str, int, float, float]] = []
    step = 0
    while len(points) < count:
        step += 1
        points += [("train/loss", step, 1.0 / step, 1.7e9 + step), ("train/learning_rate", step, 1e-4, 1.7e9 + step)]
        if step % EVAL_EVERY == 0:
            points.append(("eval/loss", step, 2.0 / step, 1.7e9 + step))
    return points[:count]


def _batches(requests: int, points_per_request: int) -> list[list[tuple[str, int, float, float]]]:
    points = trainer_points(requests * points_per_request)
    return [points[start:start + points_per_request] for start in range(0, len(points), points_per_request)]


def _bodies(run_id: int, requests: int, points_per_request: int) -> list[tuple[int, bytes]]:
    return [(run_id, json.dumps({"points": [{"key": key, "step": step, "value": value, "wall_time": wall_time}
                                            for key, step, value, wall_time in batch]}).encode())
            for batch in _batches(requests, points_per_request)]


def _wal_position(database: Database) -> int:
    with database.engine.connect() as connection:
        return connection.execute(sa.text("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")).scalar_one()


def profile_statement(database: Database, points_per_request: int, executions: int) -> str:
    """The one statement on a run of its own: mean wall time per execution (commit included), then EXPLAIN (ANALYZE,
    BUFFERS, WAL) of the next batch, which is a batch with eval/loss when one in every EVAL_EVERY steps holds one."""
    import asyncio

    import asyncpg

    from tunelab.services import metrics
    from tunelab.services.runs.run_refs import RunRef

    [run_id] = database.create_runs(1)
    run = RunRef(run_id, 1, True)
    batches = _batches(executions + 1, points_per_request)
    url = database.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)

    async def profile() -> str:
        connection = await asyncpg.connect(url)
        try:
            for batch in batches[:10]:  # warm: the statement prepared, the pages cached
                await connection.fetchrow(*_statement_call(metrics, run, batch))
            began = time.perf_counter()
            for batch in batches[10:-1]:
                await connection.fetchrow(*_statement_call(metrics, run, batch))
            per_execution_ms = (time.perf_counter() - began) / max(1, len(batches) - 11) * 1e3
            sql, *arguments = _statement_call(metrics, run, batches[-1])
            plan = await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS, WAL, SUMMARY) {sql}", *arguments)
        finally:
            await connection.close()
        keys = sorted({key for key, *_ in batches[-1]})
        lines = [f"  {len(batches) - 11} executions of {points_per_request} pts: {per_execution_ms:.3f} ms each "
                 f"(wall, commit included); EXPLAIN of one more ({', '.join(keys)}):"]
        return "\n".join([*lines, *(f"    {row[0]}" for row in plan)])

    return asyncio.run(profile())


def _statement_call(metrics, run, batch) -> list:
    sql, arguments = metrics.at_once_statement(run, batch)
    return [sql, *arguments]


def measure(client: httpx.Client, database: Database, server: psutil.Process,
            bodies: list[tuple[int, bytes]]) -> tuple[float, float, float, int]:
    """(API process CPU s, database backends' CPU s, wall s, WAL bytes) to send `bodies` one after another."""
    # Warm: the first requests open connections and fill caches, which is not the steady cost.
    for run_id, body in bodies[:20]:
        client.post(f"/api/v1/runs/{run_id}/metrics", content=body).raise_for_status()
    api_pids = [server.pid, *(child.pid for child in server.children(recursive=True))]
    db_pids = _backend_pids(database)
    wal_before = _wal_position(database) if database.backend == "postgres" else 0
    api_before, db_before, wall_before = _cpu_s(api_pids), _cpu_s(db_pids), time.perf_counter()
    for run_id, body in bodies[20:]:
        client.post(f"/api/v1/runs/{run_id}/metrics", content=body).raise_for_status()
    wall = time.perf_counter() - wall_before
    api_s, db_s = _cpu_s(api_pids) - api_before, _cpu_s(db_pids) - db_before
    wal = _wal_position(database) - wal_before if database.backend == "postgres" else 0
    return api_s, db_s, wall, wal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Redis carries the revocations that let the API remember credentials: without it every request reads them.
    add_database_arguments(parser)
    parser.add_argument("--big-requests", type=int, default=200)
    parser.add_argument("--small-requests", type=int, default=2000)
    parser.add_argument("--profile-executions", type=int, default=200,
                        help="PostgreSQL: executions of the one statement timed before its EXPLAIN (0: no profile)")
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
            big_api, big_db, big_wall, big_wal = measure(client, database, process, big)
            small_api, small_db, small_wall, small_wal = measure(client, database, process, small)
        profiles = [profile_statement(database, size, args.profile_executions) for size in (1000, 1)
                    if args.backend == "postgres" and args.profile_executions]
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
    wal = (lambda total, per: f", WAL {total / per:,.0f} B") if split else (lambda total, per: "")
    print(f"  1,000 pts/request: {figures(big_api, big_db, big_points, 1e6)} µs/point, "
          f"{big_points / big_wall:,.0f} pts/s wall{wal(big_wal, big_points)}/point")
    print(f"  1 pt/request:      {figures(small_api, small_db, args.small_requests, 1e3)} ms/request, "
          f"{args.small_requests / small_wall:,.0f} req/s wall{wal(small_wal, args.small_requests)}/request")
    if split:
        print(f"  load average {' '.join(f'{load:.2f}' for load in psutil.getloadavg())} "
              f"on {psutil.cpu_count()} CPUs")
    for profile in profiles:
        print(profile)


if __name__ == "__main__":
    main()
