"""Benchmark the web UI in a real Chromium against a fresh Tunelab.

(a) Compare page, 10 runs x 100,000 points of train/loss: the time from the /metrics/query response arriving to
    every chart having drawn it (goal < 500 ms). The page marks "tunelab:metrics-received" when the response is
    parsed and "tunelab:charts-drawn" in uPlot's draw hook; the script also measures from the response's
    responseEnd (resource timing), which includes the JSON parse.
(c) Study page, 12 runs (4 methods x 3 seeds) x 100,000 points of train/loss: data arrival to every chart drawn,
    p50/p95 over the loads (goal < 500 ms); the page marks "tunelab:metrics-to-study-charts" as the compare page does.
(b) Run page, live: the delay from a point logged (POST /runs/{id}/metrics with wall_time = now) to it being drawn
    (SSE -> chart), over ~50 points (goal p50 < 250 ms). The page records Date.now() when each train/loss step is
    first drawn in window.__tunelabDrawn[step]; browser and script share this machine's clock.
(d) Playground, tiny model on CPU: time to first token, from POST /playground sent to the first `token` event read
    on its SSE stream (base model and a 2-step LoRA run of it), for the cold first request (the inference worker
    loads both models; it imported torch as it started) and p50/p95 over PLAYGROUND_REQUESTS more with the models
    warm.

Usage: .venv/bin/python scripts/bench_ui.py [--redis-url redis://127.0.0.1:6379/11] [--port 0] [--keep]
       [--only playground]
The API serves frontend/dist: run `cd frontend && npm run build` first. Chromium is the system one (never
`playwright install`).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_auth import BENCH_ADMIN, admin_token, bearer
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUNS = 10
POINTS = 100_000
BATCH = 10_000
LATENCY_POINTS = 50
STUDY_METHODS = ("lora", "dora", "ia3", "full")
STUDY_SEEDS = (1, 2, 3)
PLAYGROUND_REQUESTS = 10


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_tunelab(data_dir: Path, port: int, redis_url: str | None) -> subprocess.Popen:
    name = f"bench{os.getpid()}"
    env = {
        **os.environ,
        "TUNELAB_DATA_DIR": str(data_dir),
        "TUNELAB_REDIS_NAMESPACE": name,
        "TUNELAB_QUEUES": name,
        "TUNELAB_DEFAULT_QUEUE": name,
        "TUNELAB_RUN_QUEUES": name,
    }
    env.pop("TUNELAB_DATABASE_URL", None)
    if redis_url:
        env["TUNELAB_REDIS_URL"] = redis_url
    else:
        env.pop("TUNELAB_REDIS_URL", None)  # `tunelab up` starts an embedded Redis
    tunelab = shutil.which("tunelab", path=str(Path(sys.executable).parent)) or "tunelab"
    log = open(data_dir / "tunelab.log", "w")
    return subprocess.Popen(
        [tunelab, "up", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_healthy(client: httpx.Client, server: subprocess.Popen, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"tunelab up exited with {server.returncode}")
        try:
            if client.get("/api/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SystemExit("Tunelab did not become healthy in time")


def stop_tunelab(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def create_external_run(client: httpx.Client, name: str, method: str = "lora", seed: int = 0) -> int:
    response = client.post(
        "/api/v1/runs", json={"external": True, "method": method, "model": "x", "name": name, "params": {"seed": seed}}
    )
    response.raise_for_status()
    return response.json()["id"]


def ingest_loss(client: httpx.Client, run_id: int, points: int, seed: int) -> None:
    rng = random.Random(seed)
    start = time.time() - points * 0.05
    floor = 1.0 + 0.1 * seed
    for first in range(0, points, BATCH):
        batch = [
            {
                "key": "train/loss",
                "step": step,
                "value": floor + 4.0 * math.exp(-step / 15_000) + rng.gauss(0, 0.08),
                "wall_time": start + step * 0.05,
            }
            for step in range(first, min(points, first + BATCH))
        ]
        client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": batch}).raise_for_status()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def bench_compare(page, base_url: str, run_ids: list[int], repeats: int) -> dict[str, list[float]]:
    """Load the compare page `repeats` times; return data->drawn times in ms (from the mark and from responseEnd)."""
    from_mark, from_response, points = [], [], []
    url = f"{base_url}/compare?runs={','.join(map(str, run_ids))}"
    for _ in range(repeats):
        page.goto(url)
        page.wait_for_function(
            "() => performance.getEntriesByName('tunelab:metrics-to-charts', 'measure').length > 0", timeout=60_000
        )
        result = page.evaluate(
            """() => {
              const measure = performance.getEntriesByName('tunelab:metrics-to-charts', 'measure')[0];
              const drawn = performance.getEntriesByName('tunelab:charts-drawn', 'mark')[0];
              const query = performance.getEntriesByType('resource').filter((r) => r.name.includes('/metrics/query'));
              const chart = document.querySelector('[data-testid="chart-train/loss"]');
              return {
                measure: measure.duration,
                fromResponse: query.length ? drawn.startTime - query[0].responseEnd : null,
                points: chart ? Number(chart.dataset.points) : 0,
              };
            }"""
        )
        from_mark.append(result["measure"])
        if result["fromResponse"] is not None:
            from_response.append(result["fromResponse"])
        points.append(result["points"])
    return {"from_mark": from_mark, "from_response": from_response, "points": points}


def make_study(data_dir: Path, client: httpx.Client) -> int:
    """A study of external runs (methods x seeds, POINTS each): a study launched through the API would queue runs
    for a worker to train, and an external run's points can only be posted; so the study row is written in SQL."""
    import json

    import sqlalchemy as sa

    run_ids = []
    for method in STUDY_METHODS:
        for seed in STUDY_SEEDS:
            run_id = create_external_run(client, f"study-{method}-{seed}", method, seed)
            ingest_loss(client, run_id, POINTS, seed=len(run_ids))
            run_ids.append(run_id)
    project_id = client.get(f"/api/v1/runs/{run_ids[0]}").json()["project_id"]
    spec = {"model": "x", "dataset_id": 1, "objective": "sft", "methods": list(STUDY_METHODS), "grid": {},
            "seeds": list(STUDY_SEEDS), "budget": {"max_steps": POINTS}, "params": {}, "queue": None}
    engine = sa.create_engine(f"sqlite:///{data_dir.resolve() / 'tunelab.db'}")
    with engine.begin() as conn:
        study_id = conn.execute(
            sa.text("INSERT INTO study (project_id, name, spec, created_at) VALUES (:p, 'bench study', :s, "
                    "CURRENT_TIMESTAMP) RETURNING id"), {"p": project_id, "s": json.dumps(spec)}).scalar_one()
        conn.execute(sa.text("UPDATE run SET study_id = :s WHERE id IN (%s)" % ",".join(map(str, run_ids))),
                     {"s": study_id})
    engine.dispose()
    return study_id


def bench_study(page, base_url: str, study_id: int, repeats: int) -> dict[str, list[float]]:
    """Load the study page `repeats` times; return metrics response -> every chart drawn, in ms."""
    from_mark, series = [], []
    for _ in range(repeats):
        page.goto(f"{base_url}/studies/{study_id}")
        page.wait_for_function(
            "() => performance.getEntriesByName('tunelab:metrics-to-study-charts', 'measure').length > 0",
            timeout=120_000,
        )
        result = page.evaluate(
            """() => ({
              measure: performance.getEntriesByName('tunelab:metrics-to-study-charts', 'measure')[0].duration,
              series: Number(document.querySelector('[data-testid="chart-train/loss"]')?.dataset.series ?? 0),
            })"""
        )
        from_mark.append(result["measure"])
        series.append(result["series"])
    return {"from_mark": from_mark, "series": series}


def bench_live(page, client: httpx.Client, base_url: str, run_id: int) -> list[float]:
    """Log points one by one on an open run page; return point-logged -> drawn delays in ms."""
    page.goto(f"{base_url}/runs/{run_id}")
    page.wait_for_selector('[data-testid="chart-train/loss"][data-points="10"]', timeout=30_000)
    step = 10
    # Warm-up: the stream is connected once a live point gets drawn.
    deadline = time.monotonic() + 30
    while True:
        step += 1
        client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": [
            {"key": "train/loss", "step": step, "value": 1.0, "wall_time": time.time()}]}).raise_for_status()
        try:
            page.wait_for_function(f"() => window.__tunelabDrawn && window.__tunelabDrawn[{step}]", timeout=2_000)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise SystemExit("the run page never drew a live point") from None
    delays = []
    for _ in range(LATENCY_POINTS):
        step += 1
        logged_at = time.time()
        client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": [
            {"key": "train/loss", "step": step, "value": 1.0 + random.random() * 0.1, "wall_time": logged_at}]})
        drawn = page.wait_for_function(
            f"() => window.__tunelabDrawn && window.__tunelabDrawn[{step}]", timeout=10_000
        ).json_value()
        delays.append(drawn - logged_at * 1000)
        time.sleep(random.uniform(0.05, 0.15))
    return delays


def train_tiny_run(client: httpx.Client) -> dict:
    """A LoRA run of the bundled tiny model, 2 steps, trained by the stack's worker."""
    page = client.get("/api/v1/datasets", params={"limit": 100}).json()
    dataset = next(d for d in page["data"] if d["bundled"] and d["name"] == "tiny-tasks")
    response = client.post("/api/v1/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": dataset["id"],
                                                 "params": {"max_steps": 2, "eval_steps": 2}})
    response.raise_for_status()
    run_id = response.json()["id"]
    deadline = time.monotonic() + 600
    while (run := client.get(f"/api/v1/runs/{run_id}").json())["status"] in ("queued", "running"):
        if time.monotonic() > deadline:
            raise SystemExit("the playground's run did not finish in 10 min")
        time.sleep(0.5)
    if run["status"] != "succeeded":
        raise SystemExit(f"the playground's run {run['status']}: {run['status_reason']}")
    return run


def time_to_first_token(client: httpx.Client, run: dict, seed: int) -> float:
    """POST /playground sent -> the first `token` event read from its stream, in ms (the stream is then drained)."""
    body = {"project_id": run["project_id"], "run_ids": [run["id"]], "include_base": True,
            "prompt": "What is 2 plus 3?", "sampling": {"max_new_tokens": 16, "do_sample": True, "seed": seed,
                                                        "ignore_eos": True}}
    sent = time.perf_counter()
    response = client.post("/api/v1/playground", json=body)
    response.raise_for_status()
    first = None
    with client.stream("GET", response.json()["events_url"], timeout=httpx.Timeout(10, read=600)) as events:
        for line in events.iter_lines():
            if line == "event: token" and first is None:
                first = (time.perf_counter() - sent) * 1000
            if line == "event: end":
                break
    if first is None:
        raise SystemExit("a playground request streamed no token")
    return first


def bench_playground(client: httpx.Client) -> tuple[float, list[float]]:
    """(cold first request's TTFT, warm requests' TTFTs) in ms."""
    run = train_tiny_run(client)
    cold = time_to_first_token(client, run, seed=0)
    return cold, [time_to_first_token(client, run, seed=i) for i in range(1, PLAYGROUND_REQUESTS + 1)]


def playground_row(cold: float, warm: list[float]) -> list[tuple[str, str, str, str, bool]]:
    return [
        ("playground TTFT, tiny model on CPU: cold first", f"{cold:.0f} ms", "", "", True),
        (f"playground TTFT, warm (n={len(warm)})", f"{percentile(warm, 50):.0f} ms", f"{percentile(warm, 95):.0f} ms",
         "", True),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", help="use this Redis instead of an embedded one")
    parser.add_argument("--port", type=int, default=0, help="API port (a free one by default)")
    parser.add_argument("--repeats", type=int, default=5, help="compare page loads to time")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    parser.add_argument("--only", choices=["playground"], help="run this benchmark alone")
    args = parser.parse_args()

    if not (ROOT / "frontend" / "dist" / "index.html").exists():
        raise SystemExit("frontend/dist is missing: run `cd frontend && npm run build` first")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("no chromium on PATH")

    port = args.port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    data_dir = Path(tempfile.mkdtemp(prefix="tunelab-bench-"))
    server = start_tunelab(data_dir, port, args.redis_url)
    try:
        with httpx.Client(base_url=base_url, timeout=120) as client:
            wait_healthy(client, server)
            client.headers.update(bearer(admin_token(base_url)))
            print(f"Tunelab at {base_url}, data in {data_dir}")
            if args.only == "playground":
                print_rows(playground_row(*bench_playground(client)))
                return
            started = time.monotonic()
            run_ids = []
            for i in range(RUNS):
                run_id = create_external_run(client, f"bench-{i + 1}")
                ingest_loss(client, run_id, POINTS, seed=i)
                run_ids.append(run_id)
            print(f"ingested {RUNS} x {POINTS:,} points in {time.monotonic() - started:.1f} s")
            study_id = make_study(data_dir, client)
            print(f"study of {len(STUDY_METHODS) * len(STUDY_SEEDS)} runs x {POINTS:,} points made")
            live_run = create_external_run(client, "bench-live")
            ingest_loss(client, live_run, 10, seed=99)

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.context.request.post(f"{base_url}/api/v1/auth/sign-in", data={
                    "email": BENCH_ADMIN["email"], "password": BENCH_ADMIN["password"]})
                compare = bench_compare(page, base_url, run_ids, args.repeats)
                study = bench_study(page, base_url, study_id, args.repeats)
                delays = bench_live(page, client, base_url, live_run)
                browser.close()
            cold_ttft, warm_ttft = bench_playground(client)
    finally:
        stop_tunelab(server)
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)

    rows = [
        (
            f"compare {RUNS}x{POINTS // 1000}k: response parsed -> charts drawn",
            f"{statistics.median(compare['from_mark']):.0f} ms",
            f"{max(compare['from_mark']):.0f} ms",
            "< 500 ms",
            statistics.median(compare["from_mark"]) < 500,
        ),
    ]
    if compare["from_response"]:
        rows.append((
            f"compare {RUNS}x{POINTS // 1000}k: responseEnd -> charts drawn",
            f"{statistics.median(compare['from_response']):.0f} ms",
            f"{max(compare['from_response']):.0f} ms",
            "< 500 ms",
            statistics.median(compare["from_response"]) < 500,
        ))
    study_runs = len(STUDY_METHODS) * len(STUDY_SEEDS)
    rows.append((
        f"study {study_runs}x{POINTS // 1000}k: response parsed -> charts drawn",
        f"{percentile(study['from_mark'], 50):.0f} ms",
        f"{percentile(study['from_mark'], 95):.0f} ms",
        "< 500 ms",
        percentile(study["from_mark"], 95) < 500,
    ))
    rows.append((
        f"run page: point logged -> drawn (n={len(delays)})",
        f"{percentile(delays, 50):.0f} ms",
        f"{percentile(delays, 95):.0f} ms",
        "p50 < 250 ms",
        percentile(delays, 50) < 250,
    ))
    rows.extend(playground_row(cold_ttft, warm_ttft))
    print_rows(rows)
    print(f"\ncompare: {args.repeats} loads, points drawn in chart-train/loss: {compare['points'][0]}")
    print(f"study: {args.repeats} loads, series in chart-train/loss: {study['series'][0]}")
    if not all(row[4] for row in rows):
        sys.exit(1)


def print_rows(rows: list[tuple[str, str, str, str, bool]]) -> None:
    print()
    print(f"{'measure':<52} {'p50':>8} {'p95/max':>9}  {'goal':<13} ok")
    for name, p50, p95, goal, ok in rows:
        print(f"{name:<52} {p50:>8} {p95:>9}  {goal:<13} {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
