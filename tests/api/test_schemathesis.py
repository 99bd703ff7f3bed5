"""schemathesis over the whole OpenAPI document: generated requests, valid and invalid, to every operation of a
real API process must get no 5xx and no answer that breaks its declared schema.

The API is a fresh install of its own (data dir, SQLite database, Redis namespace, a queue nobody consumes), so
the random DELETEs, revocations and deactivations it sends cannot touch what other tests use. It calls as the
install's admin, with an API token."""


import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import ApiProcess, first_admin_tokens, fresh_install

SEED = 20261201
EXAMPLES_PER_OPERATION = 50
API = "/api/v1"


@pytest.fixture(scope="module")
def fuzzed_stack(assets, redis_url, tmp_path_factory):
    """A fresh install's API (no worker) and its admin's two API tokens: one to call with, one it may revoke."""
    root = tmp_path_factory.mktemp("schemathesis")
    server = ApiProcess(root / "api.log", fresh_install(root, assets, "fuzz"))
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
    response = case.call_and_validate(base_url=fuzzed_stack["base_url"],
                                      headers={"Authorization": f"Bearer {fuzzed_stack['token']}"},
                                      checks=[not_a_server_error, response_schema_conformance])
    # Still calling as the admin: a revoked or refused token would make every case a 401 that tests nothing.
    assert response.status_code != 401 or response.json()["error"]["code"] != "INVALID_TOKEN", response.text
