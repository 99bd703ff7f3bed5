"""schemathesis over the whole OpenAPI document: generated requests, valid and invalid, to every operation of a
real API process must get no 5xx and no answer that breaks its declared schema.

The seed changes on every run of the suite, so that each run tries other inputs; it is printed at the start and in
every failure. Replay a failure with `TUNELAB_FUZZ_SEED=<seed>`. The seed also picks the database the install runs on
(an even seed SQLite, an odd one PostgreSQL: both are fuzzed over successive runs at the cost of one);
`TUNELAB_FUZZ_DATABASE=sqlite|postgres` overrides that.

The API is a fresh install of its own (data dir, database, Redis namespace, a queue nobody consumes), so the random
DELETEs, revocations and deactivations it sends cannot touch what other tests use. It calls as the install's admin,
with an API token."""

import os
import secrets
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import IN_CI, PG_ADMIN_URL, ApiProcess, first_admin_tokens, fresh_install

SEED = int(os.environ.get("TUNELAB_FUZZ_SEED") or secrets.randbelow(2**32))  # not `random`: plugins seed it
DATABASE = os.environ.get("TUNELAB_FUZZ_DATABASE") or ("postgres" if SEED % 2 else "sqlite")
REPLAY = f"schemathesis seed {SEED} on {DATABASE}: replay with TUNELAB_FUZZ_SEED={SEED} TUNELAB_FUZZ_DATABASE={DATABASE}"
EXAMPLES_PER_OPERATION = 30  # the seed changes every run: successive runs try other inputs
API = "/api/v1"


@pytest.fixture(scope="module")
def fuzz_database_url():
    """The install's own database: SQLite in its data dir (None), or a PostgreSQL database created for it and dropped
    after (the session's PostgreSQL database is other tests', which a fuzzer's commits would disturb)."""
    if DATABASE != "postgres":
        yield None
        return
    import sqlalchemy as sa

    name = f"tunelab_fuzz_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI but unavailable: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {str(exc).splitlines()[0]}")
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="module")
def fuzzed_stack(assets, redis_url, tmp_path_factory, fuzz_database_url, pytestconfig):
    """A fresh install's API (no worker) and its admin's two API tokens: one to call with, one it may revoke."""
    reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:  # past pytest's capture (as capsys.disabled() does), so that it shows with or without -s
        with pytestconfig.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
            reporter.write_line(f"\n{REPLAY}")
    root = tmp_path_factory.mktemp("schemathesis")
    database = {"TUNELAB_DATABASE_URL": fuzz_database_url} if fuzz_database_url else {}
    server = ApiProcess(root / "api.log", fresh_install(root, assets, "fuzz", **database))
    try:
        in_use, spare = first_admin_tokens(server.base_url, "schemathesis", "spare")
        yield {"base_url": server.base_url, "token": in_use["token"], "token_id": in_use["id"],
               "spare_token_id": spare["id"], "log": root / "api.log"}
    finally:
        server.stop()


def _schema():
    """The document the API serves, built from the same code (the fresh process is started only when tests run)."""
    from tunelab.main import create_app

    document = schemathesis.openapi.from_dict(create_app().openapi())
    # The event stream of a run that has not finished never ends: a response body schemathesis would wait on forever.
    return document.exclude(path=f"{API}/runs/{{run_id}}/events")


schema = _schema()


@schema.parametrize()
@seed(SEED)
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_server_error_and_no_schema_violation(case, fuzzed_stack):
    if case.operation.method.upper() == "DELETE" and case.operation.path == f"{API}/auth/tokens/{{token_id}}" \
            and str(case.path_parameters.get("token_id")) == str(fuzzed_stack["token_id"]):
        # Revoking the token the fuzzer calls with would turn every later case into a 401: it revokes the spare.
        case.path_parameters["token_id"] = fuzzed_stack["spare_token_id"]
    try:
        response = case.call_and_validate(base_url=fuzzed_stack["base_url"],
                                          headers={"Authorization": f"Bearer {fuzzed_stack['token']}"},
                                          checks=[not_a_server_error, response_schema_conformance])
    except Exception as failure:
        failure.add_note(REPLAY)
        raise
    # Still calling as the admin: a revoked or refused token would make every case a 401 that tests nothing.
    assert response.status_code != 401 or response.json()["error"]["code"] != "INVALID_TOKEN", \
        f"{response.text}\n{REPLAY}"
