"""`tunelab up` on a fresh data dir with nothing configured: embedded SQLite and Redis, API, a training and an
inference worker (the playground answers while a run trains); Ctrl-C stops every child, the embedded redis-server
included."""

import os
import re
import signal
import subprocess
import sys

import httpx
import psutil

from tests.conftest import _free_port, find_bundled_dataset, wait_for, wait_while_progressing
from tests.worker.conftest import FINISHED, run_progress


def _playground_answers_while_a_run_trains(browser: httpx.Client) -> None:
    browser.headers["X-CSRF-Token"] = browser.cookies["tunelab_csrf"]
    dataset = find_bundled_dataset(lambda params: browser.get("/datasets", params=params).json())

    def launch(**params) -> int:
        body = {"method": "lora", "model": "tunelab-tiny", "dataset": dataset["id"], "params": params}
        response = browser.post("/runs", json=body)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def wait(run_id: int, done) -> dict:
        return wait_while_progressing(lambda: browser.get(f"/runs/{run_id}").json(), done, run_progress,
                                      message=f"run {run_id}")

    tuned = wait(launch(max_steps=2, eval_steps=2), lambda run: run["status"] in FINISHED)
    assert tuned["status"] == "succeeded", tuned["status_reason"]
    training = launch(max_steps=100_000, eval_steps=100_000)
    try:
        wait(training, lambda run: run["status"] == "running")
        asked = browser.post("/playground", json={"project_id": tuned["project_id"], "run_ids": [tuned["id"]],
                                                  "prompt": "What is 2 plus 3?", "sampling": {"max_new_tokens": 4}})
        assert asked.status_code == 202, asked.text
        stream = browser.get(asked.json()["events_url"].removeprefix("/api/v1"), timeout=300).text
        assert stream.count("event: done") == 2 and "event: failed" not in stream, stream
        assert browser.get(f"/runs/{training}").json()["status"] == "running", "it answered while the run trained"
    finally:
        browser.post(f"/runs/{training}/cancel", params={"force": True})


def test_up_serves_and_ctrl_c_leaves_no_orphans(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNELAB_")}
    env["TUNELAB_DATA_DIR"] = str(tmp_path / "var")
    log = (tmp_path / "up.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "tunelab.cli", "up", "--port", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    me = psutil.Process(proc.pid)

    def healthy():
        assert proc.poll() is None, (tmp_path / "up.log").read_text()[-3000:]
        try:
            body = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).json()
        except httpx.HTTPError:
            return None
        return body if body["status"] == "ok" and body["workers"] else None

    try:
        health = wait_for(healthy, 180, 0.5, "tunelab up to serve with a worker")
        assert health["database"] == "ok" and health["redis"] == "ok"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=30) as browser_like:
            assert browser_like.get("/auth/setup").json()["needs_first_admin"] is True
            assert browser_like.get("/models").status_code == 401
            first = browser_like.post("/auth/first-admin", json={"email": "me@example.com", "password": "a long password"})
            assert first.status_code == 201, first.text
            models = browser_like.get("/models").json()["data"]
            _playground_answers_while_a_run_trains(browser_like)
        assert any(m["name"] == "tunelab-tiny" and m["available"] for m in models)
        assert f"http://127.0.0.1:{port}" in (tmp_path / "up.log").read_text()
        redis_pid = int(re.search(r"embedded Redis \(pid (\d+)\)", (tmp_path / "up.log").read_text()).group(1))
        assert "redis-server" in psutil.Process(redis_pid).name()
    finally:
        descendants = me.children(recursive=True)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        log.close()
    assert proc.returncode == 0, (tmp_path / "up.log").read_text()[-3000:]
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert not alive, f"left running: {[p.cmdline() for p in alive]}"
    assert not psutil.pid_exists(redis_pid) or psutil.Process(redis_pid).status() == psutil.STATUS_ZOMBIE
