"""Degraded but honest: with the database or Redis taken away from a real API process, it answers 503 in the one
error shape (and /health says so), signing in keeps working without Redis, and everything recovers by itself."""

import sqlite3
import time
import uuid

import httpx
import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from tests.api.teams_helpers import error_of
from tests.conftest import (
    FIRST_ADMIN,
    PG_ADMIN_URL,
    ApiProcess,
    _unavailable,
    first_admin_tokens,
    fresh_install,
    wait_for,
)
from tests.faults.outages import RedisServer, TcpProxy
from tunelab.api.failures import is_database_unavailable

API = "/api/v1"
ADMIN = FIRST_ADMIN


def _admin_token(base_url: str) -> dict[str, str]:
    """The fresh install's first admin, and the Authorization header of an API token of theirs."""
    return {"Authorization": f"Bearer {first_admin_tokens(base_url, 'faults')[0]['token']}"}


def _sign_in(http: httpx.Client, password: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return http.post("/auth/sign-in", json={"email": ADMIN["email"], "password": password}, headers=headers)


def _unavailable_database(response: httpx.Response) -> None:
    error = error_of(response, 503, "DATABASE_UNAVAILABLE")
    assert int(response.headers["Retry-After"]) > 0
    assert error["details"]["request_id"] == response.headers["X-Request-ID"]
    assert "127.0.0.1" not in response.text and "psycopg" not in response.text.lower()


# The database goes away ---------------------------------------------------------------------------------------------

@pytest.fixture
def database_behind_a_proxy():
    """A PostgreSQL database of this test's own, reached through a proxy the test can cut."""
    try:
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        name = f"tunelab_faults_{uuid.uuid4().hex[:10]}"
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001  (any failure to reach the server means "unavailable")
        _unavailable("PostgreSQL", str(exc).splitlines()[0])
    direct = sa.engine.make_url(PG_ADMIN_URL).set(database=name)
    proxy = TcpProxy(direct.host or "127.0.0.1", direct.port or 5432)
    try:
        yield direct.render_as_string(hide_password=False), \
            direct.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False), proxy
    finally:
        proxy.close()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_with_the_database_down_calls_answer_503_and_recover_by_themselves(database_behind_a_proxy, assets,
                                                                          redis_url, tmp_path):
    _, proxied_url, proxy = database_behind_a_proxy
    env = fresh_install(tmp_path, assets, "degraded", TUNELAB_DATABASE_URL=proxied_url)
    server = ApiProcess(tmp_path / "api.log", env)
    try:
        admin = _admin_token(server.base_url)
        with httpx.Client(base_url=server.base_url + API, timeout=30) as http:
            assert http.get("/runs", headers=admin).status_code == 200
            run = http.post("/runs", headers=admin, json={"method": "lora", "model": "tunelab-tiny", "external": True})
            steps = iter(range(10**6))

            def log_a_point() -> httpx.Response:  # after the first, on the metrics fast path's own connections
                return http.post(f"/runs/{run.json()['id']}/metrics", headers=admin,
                                 json={"points": [{"key": "train/loss", "step": next(steps), "value": 1.0}]})

            assert [log_a_point().status_code for _ in range(3)] == [200] * 3

            proxy.cut()
            started = time.monotonic()
            _unavailable_database(log_a_point())
            _unavailable_database(http.get("/runs", headers=admin))
            _unavailable_database(http.get("/projects", headers=admin))
            _unavailable_database(http.post("/runs", headers=admin,
                                            json={"method": "lora", "model": "tunelab-tiny", "external": True}))
            _unavailable_database(_sign_in(http, ADMIN["password"]))
            health = http.get("/health", headers=admin)
            assert time.monotonic() - started < 30
            assert health.status_code == 503
            # With the database down nobody can be verified as an admin: no driver errors, no host or port.
            assert health.json() | {"version": None, "workers": None} == {
                "status": "degraded", "version": None, "database": "unavailable", "redis": "ok", "workers": None}

            proxy.reopen()
            wait_for(lambda: http.get("/runs", headers=admin).status_code == 200, 30,
                     message="calls to succeed again once the database is back")
            wait_for(lambda: log_a_point().status_code == 200, 30, message="logging to succeed again")
            assert log_a_point().json()["accepted"] == 1
            assert http.get("/health").status_code == 200
            assert _sign_in(http, ADMIN["password"]).status_code == 200
    finally:
        server.stop()


@pytest.mark.parametrize(("error", "unavailable"), [
    (sa_exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("connection refused")), True),
    (sa_exc.InterfaceError("SELECT 1", {}, psycopg.InterfaceError("the connection is closed")), True),
    (sa_exc.TimeoutError("QueuePool limit of size 10 overflow 20 reached"), True),
    (sa_exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked")), True),
    (sa_exc.OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: run")), False),
    (sa_exc.IntegrityError("INSERT", {}, sqlite3.IntegrityError("FOREIGN KEY constraint failed")), False),
    (sa_exc.ProgrammingError("SELECT", {}, psycopg.ProgrammingError("syntax error")), False),
])
def test_only_failures_to_reach_the_database_are_503s(error, unavailable):
    assert is_database_unavailable(error) is unavailable


# Redis goes away ----------------------------------------------------------------------------------------------------

@pytest.fixture
def redis_of_its_own(tmp_path):
    server = RedisServer(tmp_path / "redis")
    yield server
    server.kill()


def test_with_redis_down_sign_in_works_and_is_still_limited_and_health_says_503(redis_of_its_own, assets, settings,
                                                                               migrated_db, tmp_path):
    # The test is the proxy: X-Forwarded-For tells the stranger's address from the owner's.
    attempts = 3
    env = fresh_install(tmp_path, assets, "degraded", TUNELAB_REDIS_URL=redis_of_its_own.url,
                        TUNELAB_TRUSTED_PROXIES="127.0.0.1", TUNELAB_SIGNIN_MAX_ATTEMPTS=str(attempts))
    server = ApiProcess(tmp_path / "api.log", env)
    try:
        admin = _admin_token(server.base_url)
        with httpx.Client(base_url=server.base_url + API, timeout=30) as http:
            redis_of_its_own.kill()

            started = time.monotonic()
            assert _sign_in(http, ADMIN["password"]).status_code == 200
            assert time.monotonic() - started < 5
            stranger = {"X-Forwarded-For": "203.0.113.7"}
            for _ in range(attempts):
                error_of(_sign_in(http, "a wrong guess", stranger), 401, "INVALID_CREDENTIALS")
            refused = error_of(_sign_in(http, ADMIN["password"], stranger), 429, "TOO_MANY_ATTEMPTS")
            assert 0 < refused["details"]["retry_after_s"] <= settings.signin_window_s
            # The stranger's guesses lock the email at the stranger's address only, not for its owner.
            assert _sign_in(http, ADMIN["password"], {"X-Forwarded-For": "198.51.100.1"}).status_code == 200

            anonymous = httpx.get(f"{server.base_url}{API}/health", timeout=30)  # no cookie of the sign-in above
            assert anonymous.status_code == 503
            assert (anonymous.json()["database"], anonymous.json()["redis"]) == ("ok", "unavailable")
            as_admin = http.get("/health", headers=admin)
            assert as_admin.status_code == 503 and as_admin.json()["redis"].startswith("error: ")
    finally:
        server.stop()
