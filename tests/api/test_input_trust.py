"""Input the API must not trust: ids outside the columns, characters no column can hold, server paths as models,
metrics posted into runs Tunelab trains; and what a client sees when the server fails: one shape, a request id,
no internals."""

import json
import logging
import uuid

import pytest
from fastapi.testclient import TestClient

from tests.api.teams_helpers import EXTERNAL_RUN, IDLE_QUEUE, error_of
from tests.conftest import find_bundled_dataset

API = "/api/v1"
BEYOND_INT32 = 2**31


@pytest.fixture
def sample_id(client) -> int:
    return find_bundled_dataset(lambda params: client.get(f"{API}/datasets", params=params).json())["id"]


def _fields(error: dict) -> list[str]:
    return [detail["field"] for detail in error["details"]]


# Ids beyond the columns ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "path", "field"), [
    ("GET", f"/runs/{BEYOND_INT32}", "run_id"),
    ("GET", f"/runs/{BEYOND_INT32}/metrics", "run_id"),
    ("GET", f"/datasets/{BEYOND_INT32}", "dataset_id"),
    ("GET", f"/projects/{BEYOND_INT32}", "project_id"),
    ("DELETE", f"/shares/{BEYOND_INT32}", "share_id"),
    ("DELETE", f"/auth/tokens/{BEYOND_INT32}", "token_id"),
    ("POST", f"/users/{BEYOND_INT32}/invitation", "user_id"),
    ("GET", f"/datasets?project_id={BEYOND_INT32}", "project_id"),
    ("GET", f"/projects/1/audit?before={10**20}", "before"),
    ("GET", f"/runs?project_id={10**20}", "project_id"),
    ("GET", f"/runs?ids=1&ids={10**20}", "ids.1"),
    ("POST", f"/runs/{BEYOND_INT32}/resume", "run_id"),
])
def test_an_id_beyond_int32_in_a_path_or_query_is_422_naming_it(client, method, path, field):
    error = error_of(client.request(method, API + path), 422, "VALIDATION_ERROR")
    assert _fields(error) == [field]


def test_an_event_id_beyond_the_flush_counter_is_422(client):
    run = client.post(API + "/runs", json=EXTERNAL_RUN).json()
    error = error_of(client.get(f"{API}/runs/{run['id']}/events", params={"after": BEYOND_INT32}), 422,
                     "VALIDATION_ERROR")
    assert _fields(error) == ["after"]


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/metrics/query", {"run_ids": [BEYOND_INT32]}, "run_ids.0"),
    ("/shares", {"run_ids": [1, -(2**70)]}, "run_ids.1"),
    ("/runs", {"method": "lora", "model": "tunelab-tiny", "dataset": BEYOND_INT32}, "dataset"),
    ("/runs", {**EXTERNAL_RUN, "project_id": BEYOND_INT32}, "project_id"),
    ("/users", {"email": f"{uuid.uuid4().hex}@x.test", "project_id": BEYOND_INT32}, "project_id"),
])
def test_an_id_beyond_int32_in_a_body_is_422_naming_it(client, path, body, field):
    error = error_of(client.post(API + path, json=body), 422, "VALIDATION_ERROR")
    assert _fields(error) == [field]


def test_a_metric_step_beyond_int64_is_422(client):
    run = client.post(f"{API}/runs", json=EXTERNAL_RUN).json()
    points = [{"key": "loss", "step": 2**63 - 1, "value": 1.0}, {"key": "loss", "step": 2**63, "value": 1.0}]

    error = error_of(client.post(f"{API}/runs/{run['id']}/metrics", json={"points": points}), 422)

    assert _fields(error) == ["points.1.step"]
    assert client.get(f"{API}/runs/{run['id']}/metrics").json()["series"] == []


# Characters no column can hold --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(api_server):
    """The real API process: the path and query reach it percent-encoded, as from any client."""
    import httpx

    with httpx.Client(base_url=api_server + API, timeout=30) as http:
        yield http


def test_nul_in_a_query_is_422_naming_the_parameter(server, auth_headers):
    error = error_of(server.get("/runs?limit=5&q=%00", headers=auth_headers), 422, "VALIDATION_ERROR")
    assert _fields(error) == ["q"] and error["message"].startswith("q: ")


def test_nul_in_a_path_is_422_naming_the_parameter(server, auth_headers):
    error = error_of(server.get("/runs/2/artifacts/train.log%00.png", headers=auth_headers), 422)
    assert _fields(error) == ["path"]


def test_nul_in_an_unauthenticated_sign_in_is_422_naming_the_field(server):
    response = server.post("/auth/sign-in", content=b'{"email": "a\\u0000@b.c", "password": "x"}',
                           headers={"Content-Type": "application/json"})
    assert _fields(error_of(response, 422, "VALIDATION_ERROR")) == ["email"]


@pytest.mark.parametrize(("path", "raw", "field"), [
    ("/projects", '{"name": "half a pair \\ud83d"}', "name"),
    ("/projects", '{"name": "nul \\u0000"}', "name"),
    ("/metrics/query", '{"run_ids": [1], "keys": ["ok", "lo\\u0000ss"]}', "keys.1"),
    ("/runs", '{"method": "lora", "model": "tunelab-tiny", "external": true, "params": {"a\\udc00b": 1}}',
     "params.ab"),
])
def test_nul_or_a_lone_surrogate_in_a_json_body_is_422_naming_the_field(client, path, raw, field):
    response = client.post(API + path, content=raw.encode(), headers={"Content-Type": "application/json"})
    assert _fields(error_of(response, 422, "VALIDATION_ERROR")) == [field]


def test_a_valid_surrogate_pair_is_kept(client):
    name = f"emoji \U0001f600 {uuid.uuid4().hex[:6]}"
    response = client.post(f"{API}/projects", content=json.dumps({"name": name}).encode(),
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.json()["name"] == name


def test_nul_in_a_metric_key_is_422_and_stores_nothing(client):
    run = client.post(f"{API}/runs", json=EXTERNAL_RUN).json()
    raw = b'{"points": [{"key": "loss", "step": 1, "value": 1.0}, {"key": "lo\\u0000ss", "step": 1, "value": 1}]}'

    response = client.post(f"{API}/runs/{run['id']}/metrics", content=raw, headers={"Content-Type": "application/json"})

    assert _fields(error_of(response, 422)) == ["points.1.key"]
    assert client.get(f"{API}/runs/{run['id']}/metrics").json()["series"] == []


def _multipart(name: bytes, filename: bytes) -> bytes:
    row = json.dumps({"text": uuid.uuid4().hex}).encode()
    return (b'--B\r\nContent-Disposition: form-data; name="name"\r\n\r\n' + name +
            b'\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="' + filename +
            b'"\r\nContent-Type: application/jsonl\r\n\r\n' + row + b'\n\r\n--B--\r\n')


@pytest.mark.parametrize(("name", "filename", "field"), [
    (b"bad\x00name", b"rows.jsonl", "name"),
    (b"fine", b"rows\x00.jsonl", "file"),
])
def test_nul_in_a_form_field_is_422_naming_the_field(client, name, filename, field):
    response = client.post(f"{API}/datasets", content=_multipart(name, filename),
                           headers={"Content-Type": "multipart/form-data; boundary=B"})
    assert _fields(error_of(response, 422, "VALIDATION_ERROR")) == [field]


# Unexpected errors --------------------------------------------------------------------------------------------------

SECRET_DETAIL = "password=hunter2 at /srv/tunelab/secret.py"


@pytest.fixture
def failing_app(migrated_db):
    """The real app with one more route that fails as a bug would."""
    from tunelab.api.policies import Public
    from tunelab.main import create_app

    app = create_app()

    def explode() -> None:
        raise RuntimeError(SECRET_DETAIL)

    app.add_api_route("/api/v1/explode", explode, dependencies=[Public], include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())  # before the SPA's catch-all
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_an_unexpected_error_is_a_500_in_the_error_shape_with_a_request_id_and_no_internals(failing_app, caplog):
    with caplog.at_level(logging.ERROR, logger="tunelab.api"):
        response = failing_app.get(f"{API}/explode")

    error = error_of(response, 500, "INTERNAL_ERROR")
    request_id = response.headers["X-Request-ID"]
    assert error["details"] == {"request_id": request_id} and request_id in error["message"]
    assert "hunter2" not in response.text and "RuntimeError" not in response.text
    [record] = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.exc_info is not None and SECRET_DETAIL in str(record.exc_info[1])


def test_every_answer_carries_a_request_id_and_a_sane_incoming_one_is_kept(client):
    generated = client.get(f"{API}/methods").headers["X-Request-ID"]
    assert len(generated) == 32 and generated != client.get(f"{API}/methods").headers["X-Request-ID"]
    assert client.get(f"{API}/methods", headers={"X-Request-ID": "trace-1234abcd"}).headers["X-Request-ID"] == \
        "trace-1234abcd"
    assert client.get(f"{API}/methods", headers={"X-Request-ID": "bad id\twith spaces"}).headers[
        "X-Request-ID"] != "bad id\twith spaces"
    assert "X-Request-ID" in client.get(f"{API}/runs/{BEYOND_INT32}").headers


# Models: hub ids, or paths under the model roots --------------------------------------------------------------------

def _model_refusal(client, sample_id: int, model: str) -> dict:
    body = {"method": "lora", "model": model, "dataset": sample_id, "queue": IDLE_QUEUE}
    error = error_of(client.post(f"{API}/runs", json=body), 422, "MODEL_NOT_FOUND")
    return {**error, "message": error["message"].replace(repr(model), "<model>")}


def test_a_model_path_outside_the_roots_gets_the_same_422_whether_it_exists_or_not(client, sample_id, settings,
                                                                                  tmp_path):
    outside = tmp_path / "weights"
    outside.mkdir()
    (outside / "config.json").write_text("{}")
    inside_link = settings.models_dir / f"link-{uuid.uuid4().hex[:8]}"
    inside_link.symlink_to(outside)

    existing = _model_refusal(client, sample_id, str(outside))
    missing = _model_refusal(client, sample_id, str(tmp_path / "no-such-weights"))
    escaping = _model_refusal(client, sample_id, str(inside_link))
    dotted = _model_refusal(client, sample_id, f"{settings.models_dir}/../{outside.relative_to('/')}")
    missing_inside = _model_refusal(client, sample_id, str(settings.models_dir / "no-such-model"))

    assert existing == missing == escaping == dotted == missing_inside
    assert existing["details"] == {"field": "model"}


def test_a_model_path_under_a_root_is_accepted(client, sample_id, assets):
    tiny = next(m for m in client.get(f"{API}/models").json()["data"] if m["name"] == "tunelab-tiny")
    body = {"method": "lora", "model": tiny["path"], "dataset": sample_id, "queue": IDLE_QUEUE}
    response = client.post(f"{API}/runs", json=body)
    assert response.status_code == 201, response.text


def test_the_dataset_preview_refuses_a_model_path_outside_the_roots(client, sample_id, tmp_path):
    response = client.get(f"{API}/datasets/{sample_id}/preview", params={"model": str(tmp_path)})
    error_of(response, 422, "MODEL_NOT_FOUND")


# Metrics only into external runs ------------------------------------------------------------------------------------

def test_metrics_posted_into_a_run_tunelab_trains_are_refused_with_409(client, sample_id):
    run = client.post(f"{API}/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": sample_id,
                                           "queue": IDLE_QUEUE}).json()
    point = {"points": [{"key": "train/loss", "step": 99_999, "value": 0.001}]}

    error = error_of(client.post(f"{API}/runs/{run['id']}/metrics", json=point), 409, "RUN_NOT_EXTERNAL")

    assert error["details"] == {"run_id": run["id"]} and "external" in error["message"]
    assert client.get(f"{API}/runs/{run['id']}/metrics").json()["series"] == []
    assert client.get(f"{API}/runs/{run['id']}").json()["latest_train_loss"] is None
