"""Fault injection against real processes: a private Tunelab (own SQLite database, data dir, queue and namespace)
whose API and workers use only a Redis the test starts, kills and restarts on a port of its own."""

from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ApiProcess, WorkerProcess, first_admin_tokens, fresh_install
from tests.faults.outages import RedisServer
from tests.worker.conftest import sample_dataset  # noqa: F401  (a fixture the fault tests on the session stack use)


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
    redis_server = RedisServer(tmp_path / "redis")
    env = fresh_install(tmp_path, assets, "faults", TUNELAB_REDIS_URL=redis_server.url)
    server = ApiProcess(tmp_path / "api.log", env)
    token = first_admin_tokens(server.base_url, "faults")[0]["token"]
    api = httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30, headers={"Authorization": f"Bearer {token}"})
    stack = PrivateStack(tmp_path, env, redis_server, server, api, env["TUNELAB_QUEUES"])
    try:
        yield stack
    finally:
        stack.close()
