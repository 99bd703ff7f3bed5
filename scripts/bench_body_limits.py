"""Benchmark the body limits: is the API still answering while refused oversized metrics batches arrive?

    python scripts/bench_body_limits.py --backend sqlite [--clients 4] [--duration 20]
    python scripts/bench_body_limits.py --backend postgres

Starts a real `tunelab api` process on a fresh database, signs in as the first admin, creates an external run and
logs one small batch into it (so the metrics fast path knows the caller). Then, for --duration seconds, --clients
clients each send --rate oversized batches a second, in turn:

- the issue's 1,000,000-point batch (~46 MB) with its Content-Length: refused (413) before its body is read;
- the same bytes chunked, without a Content-Length: refused (413) as it streams past the limit;
- a batch of 80,000 short points that fits the byte limit: refused (422) from a count of its points.

Meanwhile a process of its own asks `GET /api/v1/health` --health-rate times a second on one connection; its latency
is measured from each request's scheduled start, so a stall counts in full. Prints /health p50/p99/max against the 250 ms target,
what each kind of batch got and how fast, and the machine's load average.
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_auth import admin_token, bearer  # noqa: E402
from bench_harness import CpuAccount, process_tree  # noqa: E402
from bench_tunelab import REPO_ROOT, Database, add_database_arguments, free_port, start_server  # noqa: E402

TARGET_P99_MS = 250.0
HUGE_POINTS = 1_000_000
COUNTED_POINTS = 80_000
# Bytes of a refused body sent before its answer is awaited: a server that waits for the rest never answers.
SENT_BEFORE_ANSWER = 1024 * 1024
ANSWER_TIMEOUT_S = 30.0


def batch(points: int) -> bytes:
    return json.dumps({"points": [{"key": "train/loss", "step": step, "value": 0.5} for step in range(points)]},
                      separators=(",", ":")).encode()


@dataclass
class Kind:
    """One kind of oversized batch: how it is framed, and what it got."""

    name: str
    body: bytes
    chunked: bool
    statuses: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)


async def read_answer(reader: asyncio.StreamReader) -> int:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    length = next((int(line.split(":", 1)[1]) for line in head if line.lower().startswith("content-length:")), 0)
    await reader.readexactly(length)
    return int(head[0].split(" ", 2)[1])


async def send_oversized(port: int, headers: str, path: str, kind: Kind) -> None:
    """One batch on a connection of its own (a refused body leaves the connection unusable), and its answer."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        framing = "Transfer-Encoding: chunked" if kind.chunked else f"Content-Length: {len(kind.body)}"
        writer.write(f"POST {path} HTTP/1.1\r\n{headers}Content-Type: application/json\r\n{framing}\r\n\r\n".encode())
        answer = asyncio.ensure_future(read_answer(reader))
        try:
            for offset in range(0, len(kind.body), SENT_BEFORE_ANSWER):
                if answer.done():
                    break
                piece = kind.body[offset:offset + SENT_BEFORE_ANSWER]
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if kind.chunked else piece)
                await writer.drain()
            if kind.chunked and not answer.done():
                writer.write(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed the connection while the body was still coming
        status = await asyncio.wait_for(answer, ANSWER_TIMEOUT_S)
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
        status = type(exc).__name__
    finally:
        writer.close()
    kind.statuses[status] += 1
    kind.latencies.append(time.monotonic() - started)


async def oversized_client(port: int, headers: str, path: str, kinds: list[Kind], first: int, rate: float,
                           until: float) -> None:
    """`rate` batches a second on a schedule (the next one at once when an answer is late), the kinds in turn."""
    turn, scheduled = first, time.monotonic()
    while scheduled < until:
        await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
        await send_oversized(port, headers, path, kinds[turn % len(kinds)])
        turn += 1
        scheduled += 1.0 / rate


def sample_health(port: int, rate: float, start: float, until: float, out: multiprocessing.Queue) -> None:
    """GET /health on a schedule, in a process of its own so that the senders' work never delays a sample; puts
    (latencies, failures) on `out`."""
    import http.client

    latencies: list[float] = []
    failures: Counter = Counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    scheduled = start
    while scheduled < until:
        time.sleep(max(0.0, scheduled - time.monotonic()))
        try:
            connection.request("GET", "/api/v1/health")
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                failures[response.status] += 1
        except (OSError, http.client.HTTPException) as exc:
            failures[type(exc).__name__] += 1
            connection.close()
        latencies.append(time.monotonic() - scheduled)
        scheduled += 1.0 / rate
    connection.close()
    out.put((latencies, failures))


async def send_oversized_batches(args: argparse.Namespace, port: int, token: str, run_id: int, kinds: list[Kind],
                                 until: float) -> None:
    headers = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
    path = f"/api/v1/runs/{run_id}/metrics"
    await asyncio.gather(*(oversized_client(port, headers, path, kinds, client, args.rate, until)
                           for client in range(args.clients)))


def load(args: argparse.Namespace, port: int, token: str, run_id: int, kinds: list[Kind]) -> tuple[list, Counter]:
    start = time.monotonic() + 1.0
    until = start + args.duration
    out: multiprocessing.Queue = multiprocessing.Queue()
    sampler = multiprocessing.Process(target=sample_health, args=(port, args.health_rate, start, until, out))
    sampler.start()
    time.sleep(max(0.0, start - time.monotonic()))
    asyncio.run(send_oversized_batches(args, port, token, run_id, kinds, until))
    latencies, failures = out.get()
    sampler.join()
    return latencies, failures


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def report(latencies: list[float], failures: Counter, kinds: list[Kind], api_cpu_s: float, load_before: tuple,
           load_after: tuple, args: argparse.Namespace) -> bool:
    ms = [value * 1000 for value in latencies]
    p99 = percentile(ms, 99)
    ok = p99 < TARGET_P99_MS and not failures
    print(f"\n/health while oversized batches arrive ({args.backend}, {args.clients} clients, {args.duration:g} s)")
    print(f"  {len(ms)} requests: p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {max(ms):.1f} ms "
          f"(target p99 < {TARGET_P99_MS:.0f} ms: {'met' if ok else 'MISSED'})"
          + (f"; failures {dict(failures)}" if failures else ""))
    for kind in kinds:
        if kind.latencies:
            print(f"  {kind.name} ({len(kind.body) / 1e6:.1f} MB): {sum(kind.statuses.values())} sent, answered "
                  f"{dict(kind.statuses)}, p50 {statistics.median(kind.latencies) * 1000:.0f} ms "
                  f"from the first byte to the answer")
    print(f"  API process CPU: {api_cpu_s:.1f} s in {args.duration:g} s ({api_cpu_s / args.duration:.0%} of one core), "
          f"refusals and /health together")
    print(f"  load average (1, 5, 15 min): before {', '.join(f'{v:.2f}' for v in load_before)}; "
          f"after {', '.join(f'{v:.2f}' for v in load_after)}; {os.cpu_count()} CPUs")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_arguments(parser)
    parser.add_argument("--clients", type=int, default=4, help="connections sending oversized batches")
    parser.add_argument("--rate", type=float, default=2.0, help="oversized batches per second per client")
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--health-rate", type=float, default=20.0, help="GET /health per second")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    huge = batch(HUGE_POINTS)
    kinds = [Kind(f"{HUGE_POINTS:,} points, Content-Length", huge, chunked=False),
             Kind(f"{HUGE_POINTS:,} points, chunked", huge, chunked=True),
             Kind(f"{COUNTED_POINTS:,} points within the byte limit", batch(COUNTED_POINTS), chunked=False)]
    workdir = Path(tempfile.mkdtemp(prefix="tunelab-bench-body-limits-"))
    database = Database(args.backend, args.pg_admin_url, workdir)
    server = None
    try:
        port = free_port()
        command = [sys.executable, "-m", "tunelab.cli", "api", "--host", "127.0.0.1", "--port", str(port)]
        settings = {"TUNELAB_REDIS_URL": args.redis_url,
                    "TUNELAB_REDIS_NAMESPACE": f"tunelab-bench-{uuid.uuid4().hex[:8]}"}
        with (workdir / "api.log").open("wb") as log:
            server = start_server(database.url, workdir, port, command, settings, log)
        import httpx

        base = f"http://127.0.0.1:{port}/api/v1"
        token = admin_token(f"http://127.0.0.1:{port}")
        run = httpx.post(f"{base}/runs", headers=bearer(token), timeout=60,
                         json={"method": "lora", "model": "tunelab-tiny", "external": True}).raise_for_status().json()
        httpx.post(f"{base}/runs/{run['id']}/metrics", headers=bearer(token), timeout=60,
                   json={"points": [{"key": "train/loss", "step": 0, "value": 1.0}]}).raise_for_status()
        load_before = os.getloadavg()
        api_cpu = CpuAccount([process_tree(server.pid)])
        api_cpu.start()
        latencies, failures = load(args, port, token, run["id"], kinds)
        api_cpu_s = api_cpu.stop()
        load_after = os.getloadavg()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        database.close()
    ok = report(latencies, failures, kinds, api_cpu_s, load_before, load_after, args)
    if args.strict and not ok:
        sys.exit(1)


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    main()
