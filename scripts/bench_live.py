"""Benchmark the live path: many runs logging at a trainer's pace while many browsers watch them over SSE.

    python scripts/bench_live.py --backend sqlite
    python scripts/bench_live.py --backend postgres [--pg-admin-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
    python scripts/bench_live.py --backend postgres --api-workers 2    (TUNELAB_API_WORKERS: API processes)

Starts a real `tunelab api` process (uvicorn with its access log, as `tunelab up` runs it) on a fresh database and a
private Redis namespace, signs in as the first admin, creates external runs, opens the SSE clients (10 per run) and
then, for --duration seconds, posts 10 batches a second to every run (3 keys × 5 steps each, like a trainer's
flush) while a few pollers read `GET /runs` as open run lists do. Finally each run is canceled, which ends its
streams, and the script prints p50/p99 per endpoint (from each request's scheduled start, so a stall counts in
full), the points sent vs stored vs received by every SSE client (lost, duplicated), how late points reached the
clients, and the CPU the API and the load generator used.

The load generator is one asyncio loop speaking HTTP/1.1 on raw keep-alive streams, so it costs the API's
2-core machine little.
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_auth import admin_token  # noqa: E402
from bench_tunelab import REPO_ROOT, Database, add_database_arguments, free_port, start_server  # noqa: E402

TARGET_P99_MS = 250.0
KEYS = ("train/loss", "train/learning_rate", "train/grad_norm")
STEPS_PER_BATCH = 5
LIST_PATH = "/api/v1/runs?limit=50"
DRAIN_TIMEOUT_S = 60.0


class Http:
    """One keep-alive HTTP/1.1 connection on asyncio streams: a request at a time, Content-Length bodies."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> "Http":
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def request(self, method: str, path: str, body: bytes = b"", headers: str = "") -> tuple[int, dict, bytes]:
        if self.writer is None:
            await self.open()
        content = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body else ""
        self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}{content}{headers}\r\n".encode() + body)
        status, response_headers = await self.read_head()
        if response_headers.get("transfer-encoding") == "chunked":
            return status, response_headers, b""  # a stream: the caller reads it
        data = await self.reader.readexactly(int(response_headers.get("content-length", 0)))
        if response_headers.get("connection") == "close":
            self.close()
        return status, response_headers, data

    async def read_head(self) -> tuple[int, dict]:
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        return int(head[0].split(" ", 2)[1]), headers

    async def chunks(self):
        """The body of a chunked response, chunk by chunk, until its end (or the connection's)."""
        while True:
            size = int((await self.reader.readline()).split(b";")[0], 16)
            data = await self.reader.readexactly(size + 2)
            if size == 0:
                return
            yield data[:-2]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Endpoint:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


@dataclass
class Viewer:
    """One SSE client of one run: what it received, by (key, step)."""

    run_id: int
    received: set = field(default_factory=set)
    duplicates: int = 0
    connects: int = 0
    ended: bool = False
    attached: asyncio.Event = field(default_factory=asyncio.Event)
    delays: list[float] = field(default_factory=list)


async def watch(port: int, token: str, viewer: Viewer, give_up: asyncio.Event) -> None:
    """Follow a run's stream as a browser's EventSource does: reconnect after `retry` with Last-Event-ID."""
    last_id, retry_s = None, 2.0
    while not viewer.ended and not give_up.is_set():
        http = Http(port, token)
        try:
            await http.open()
            viewer.connects += 1
            resume = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
            status, _, _ = await http.request("GET", f"/api/v1/runs/{viewer.run_id}/events",
                                              headers=f"Accept: text/event-stream\r\n{resume}")
            if status != 200:
                raise ConnectionError(f"events answered {status}")
            buffer = ""
            async for chunk in http.chunks():
                buffer += chunk.decode()
                *blocks, buffer = buffer.split("\n\n")
                for block in blocks:
                    fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
                    if "retry" in fields:
                        retry_s = int(fields["retry"]) / 1000
                    event = fields.get("event")
                    if "id" in fields:
                        last_id = fields["id"]
                    if event == "status":
                        viewer.attached.set()
                    elif event == "metrics":
                        now = time.time()
                        for point in json.loads(fields["data"]):
                            seen = (point["key"], point["step"])
                            if seen in viewer.received:
                                viewer.duplicates += 1
                            viewer.received.add(seen)
                            viewer.delays.append(now - point["wall_time"])
                    elif event == "end":
                        viewer.ended = True
                        return
        except (OSError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            http.close()
        await asyncio.sleep(retry_s)


async def log_run(port: int, token: str, run_id: int, rate: float, start: float, until: float,
                  endpoint: Endpoint) -> int:
    """Post `rate` batches a second on a schedule from `start`; a late answer delays the next send and counts in
    its latency."""
    http = await Http(port, token).open()
    interval, sent, step = 1.0 / rate, 0, 0
    scheduled = start
    while scheduled < until:
        await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
        now = time.time()
        points = [{"key": key, "step": step + i, "value": 1.0 / (step + i + 1), "wall_time": now}
                  for i in range(STEPS_PER_BATCH) for key in KEYS]
        try:
            status, _, _ = await http.request("POST", f"/api/v1/runs/{run_id}/metrics",
                                              json.dumps({"points": points}).encode())
        except (OSError, asyncio.IncompleteReadError) as exc:
            endpoint.error(type(exc).__name__)
            http.close()
            status = 0
        endpoint.latencies.append(time.monotonic() - scheduled)
        if status == 200:
            sent += len(points)
            step += STEPS_PER_BATCH
        elif status:
            endpoint.error(str(status))
        scheduled += interval
    http.close()
    return sent


async def poll_runs(port: int, token: str, interval: float, start: float, until: float, endpoint: Endpoint) -> None:
    http = await Http(port, token).open()
    scheduled = start
    while scheduled < until:
        await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
        try:
            status, _, _ = await http.request("GET", LIST_PATH)
        except (OSError, asyncio.IncompleteReadError) as exc:
            endpoint.error(type(exc).__name__)
            http.close()
            status = 0
        endpoint.latencies.append(time.monotonic() - scheduled)
        if status and status != 200:
            endpoint.error(str(status))
        scheduled += interval
    http.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Outcome:
    ingest: Endpoint
    listing: Endpoint
    viewers: list[Viewer]
    sent: dict[int, int]
    stored: dict[int, int]
    load_s: float
    api_cpu_s: float
    client_cpu_s: float


async def load(args, port: int, token: str, api: psutil.Process) -> tuple[Outcome, list[int]]:
    control = Http(port, token)
    run_ids = []
    for i in range(args.runs):
        status, _, body = await control.request("POST", "/api/v1/runs", json.dumps(
            {"method": "lora", "model": "external-model", "external": True, "name": f"live-{i}"}).encode())
        assert status == 201, body
        run_ids.append(json.loads(body)["id"])

    give_up = asyncio.Event()
    viewers = [Viewer(run_id) for run_id in run_ids for _ in range(args.viewers_per_run)]
    watchers = [asyncio.create_task(watch(port, token, viewer, give_up)) for viewer in viewers]
    async with asyncio.timeout(60):
        await asyncio.gather(*(viewer.attached.wait() for viewer in viewers))

    ingest, listing = Endpoint("POST /runs/{id}/metrics"), Endpoint("GET /runs")
    api_processes = [api, *api.children(recursive=True)]  # uvicorn's workers, with --api-workers

    def api_cpu_s() -> float:
        return sum(sum(process.cpu_times()[:2]) for process in api_processes)

    api_cpu, client_cpu, started = api_cpu_s(), time.process_time(), time.monotonic()
    until = started + args.duration
    # Runs train independently, so their flushes are spread over each interval rather than sent in one burst.
    poll_interval = args.list_pollers / args.list_rate
    pollers = [poll_runs(port, token, poll_interval, started + i * poll_interval / args.list_pollers, until, listing)
               for i in range(args.list_pollers)]
    loggers = [log_run(port, token, run_id, args.rate, started + i / (args.rate * len(run_ids)), until, ingest)
               for i, run_id in enumerate(run_ids)]
    results = await asyncio.gather(*loggers, *pollers)
    load_s = time.monotonic() - started
    api_cpu_used, client_cpu_used = api_cpu_s() - api_cpu, time.process_time() - client_cpu
    sent = dict(zip(run_ids, results[: len(run_ids)], strict=True))

    control.close()  # idle past uvicorn's keep-alive timeout by now
    for run_id in run_ids:
        status, _, body = await control.request("POST", f"/api/v1/runs/{run_id}/cancel")
        assert status == 200, body
    control.close()
    try:
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            await asyncio.gather(*watchers)
    except TimeoutError:
        give_up.set()
        await asyncio.gather(*watchers)
    outcome = Outcome(ingest, listing, viewers, sent, {}, load_s, api_cpu_used, client_cpu_used)
    return outcome, run_ids


def stored_points(database: Database, run_ids: list[int]) -> dict[int, int]:
    with database.engine.connect() as connection:
        rows = connection.execute(sa.text("SELECT run_id, sum(count) FROM metric_chunk GROUP BY run_id"))
        counts = dict(rows.all())
    return {run_id: counts.get(run_id, 0) for run_id in run_ids}


def report(args, outcome: Outcome, log_path: Path) -> bool:
    processes = f"{args.api_workers} API processes" if args.api_workers > 1 else "1 API process"
    print(f"\nTunelab live path on {args.backend} ({processes}): {args.runs} runs × {args.rate:g} batches/s "
          f"({len(KEYS)} keys × {STEPS_PER_BATCH} steps) + {len(outcome.viewers)} SSE clients "
          f"({args.viewers_per_run} per run) + GET /runs at {args.list_rate:g}/s, for {outcome.load_s:.0f} s")
    header = ("endpoint", "requests", "per s", "p50 ms", "p99 ms", "max ms", "errors", "target")
    rows, ok = [], True
    for endpoint in (outcome.ingest, outcome.listing):
        p99 = percentile(endpoint.latencies, 0.99) * 1000
        ok &= p99 < TARGET_P99_MS and not endpoint.errors
        rows.append((endpoint.name, f"{len(endpoint.latencies):,}", f"{len(endpoint.latencies) / outcome.load_s:.1f}",
                     f"{percentile(endpoint.latencies, 0.5) * 1000:.1f}", f"{p99:.1f}",
                     f"{max(endpoint.latencies, default=0) * 1000:.1f}",
                     ", ".join(f"{k}×{v}" for k, v in endpoint.errors.items()) or "0", f"p99 < {TARGET_P99_MS:g}"))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))

    sent, stored = sum(outcome.sent.values()), sum(outcome.stored.values())
    print(f"\npoints: sent {sent:,}, stored {stored:,}"
          + ("" if outcome.sent == outcome.stored else "  (stored differs from sent!)"))
    ok &= outcome.sent == outcome.stored
    exact, lost_total, dup_total = 0, 0, 0
    for viewer in outcome.viewers:
        lost = outcome.stored[viewer.run_id] - len(viewer.received)
        lost_total += lost
        dup_total += viewer.duplicates
        if lost == 0 and viewer.duplicates == 0 and viewer.ended:
            exact += 1
        else:
            print(f"  client of run {viewer.run_id}: received {len(viewer.received):,} of "
                  f"{outcome.stored[viewer.run_id]:,} ({viewer.duplicates} twice, ended={viewer.ended})")
    per_client = sorted({len(viewer.received) for viewer in outcome.viewers}) or [0]
    print(f"received per SSE client: {per_client[0]:,}–{per_client[-1]:,} points (each of its run's stored "
          f"points); {exact} of {len(outcome.viewers)} clients got every point exactly once and the end event; "
          f"lost {lost_total}, duplicates {dup_total}, connections {sum(v.connects for v in outcome.viewers)}")
    ok &= exact == len(outcome.viewers)
    delays = [d for viewer in outcome.viewers for d in viewer.delays]
    print(f"delay from a batch's send to a client's receipt: p50 {percentile(delays, 0.5) * 1000:.0f} ms, "
          f"p99 {percentile(delays, 0.99) * 1000:.0f} ms")
    cores = psutil.cpu_count()
    print(f"CPU during the load: {processes} {outcome.api_cpu_s / outcome.load_s:.0%} of one core, load generator "
          f"{outcome.client_cpu_s / outcome.load_s:.0%} (machine: {cores} cores); "
          f"API log: {log_path} ({log_path.stat().st_size // 1024:,} KiB)")
    print("target met" if ok else "TARGET MISSED")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_arguments(parser)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rate", type=float, default=10.0, help="batches per second per run")
    parser.add_argument("--viewers-per-run", type=int, default=10)
    parser.add_argument("--list-rate", type=float, default=5.0, help="GET /runs per second, all pollers together")
    parser.add_argument("--list-pollers", type=int, default=5)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--api-workers", type=int, default=1, help="TUNELAB_API_WORKERS of the API")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    workdir = Path(tempfile.mkdtemp(prefix="tunelab-bench-live-"))
    database = Database(args.backend, args.pg_admin_url, workdir)
    log_path = workdir / "api.log"
    server = None
    try:
        port = free_port()
        command = [sys.executable, "-m", "tunelab.cli", "api", "--host", "127.0.0.1", "--port", str(port)]
        settings = {"TUNELAB_REDIS_URL": args.redis_url, "TUNELAB_API_WORKERS": str(args.api_workers),
                    "TUNELAB_REDIS_NAMESPACE": f"tunelab-bench-{uuid.uuid4().hex[:8]}"}
        with log_path.open("wb") as log:
            server = start_server(database.url, workdir, port, command, settings, log)
        token = admin_token(f"http://127.0.0.1:{port}")
        outcome, run_ids = asyncio.run(load(args, port, token, psutil.Process(server.pid)))
        outcome.stored = stored_points(database, run_ids)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        database.close()
    ok = report(args, outcome, log_path)
    if args.strict and not ok:
        sys.exit(1)


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    main()
