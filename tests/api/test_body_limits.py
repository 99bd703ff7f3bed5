"""Bodies bounded before they are read: a real API process with a small JSON body limit, over raw sockets so the test
controls what is sent and when (a server that read a body before answering would never answer one that never ends);
and, in process, JSON past the nesting bound and metrics batches past the point limit."""

import json
import os
import select
import socket
from collections.abc import Iterator

import pytest

from tests.api.teams_helpers import EXTERNAL_RUN, error_of
from tests.conftest import ApiProcess
from tests.raw_http import open_socket, read_answer, request_head
from tunelab.core.json_limits import MAX_DEPTH
from tunelab.schemas.metrics import MAX_POINTS_PER_BATCH

API = "/api/v1"
LIMIT = 4096
# What a stranger sends when they mean to exhaust the memory of a server that reads a body before checking it.
HUGE = 300 * 1024 * 1024
# A sender stops here: a server that had not answered by then is reading the whole body.
SEND_AT_MOST = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def limited_api(migrated_db, assets, redis_url, data_dir):
    server = ApiProcess(data_dir / "api-body-limit.log", {**os.environ, "TUNELAB_BODY_MAX_BYTES": str(LIMIT)})
    yield server.base_url
    server.stop()


def _head(base_url: str, path: str, headers: dict[str, str]) -> bytes:
    return request_head(base_url, API + path, "application/json", headers)


def _error(status: int, body: dict, expected_status: int, code: str) -> dict:
    assert status == expected_status, body
    assert list(body) == ["error"] and body["error"]["code"] == code, body
    return body["error"]


def _endless_json() -> Iterator[bytes]:
    """The start of a JSON object whose one string never ends."""
    yield b'{"name": "'
    while True:
        yield b"x" * 16384


def _stream_until_answered(sock: socket.socket) -> int:
    """Send an endless chunked JSON body until the server answers (or SEND_AT_MOST); the bytes sent."""
    sent = 0
    for piece in _endless_json():
        if select.select([sock], [], [], 0)[0] or sent > SEND_AT_MOST:
            break
        try:
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    return sent


# The caller before the body ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("framing", "start"), [({"Content-Length": str(HUGE)}, b'{"method": '),
                                               ({"Transfer-Encoding": "chunked"}, b'b\r\n{"method": \r\n')],
                         ids=["content-length", "chunked"])
def test_an_anonymous_body_to_a_route_that_needs_a_caller_is_401_before_it_is_sent(limited_api, framing, start):
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, "/runs", framing) + start)  # and not one byte more

        status, body = read_answer(sock)

    _error(status, body, 401, "AUTH_REQUIRED")


def test_a_malformed_body_from_nobody_is_401_not_422(limited_api):
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, "/projects", {"Content-Length": "9"}) + b"{not json")

        status, body = read_answer(sock)

    _error(status, body, 401, "AUTH_REQUIRED")


# 413 as the body streams ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "with_token"), [("/auth/sign-in", False), ("/projects", True)],
                         ids=["public-without-token", "with-token"])
def test_a_declared_length_over_the_limit_is_413_before_the_body_is_sent(limited_api, auth_headers, path,
                                                                           with_token):
    headers = {**(auth_headers if with_token else {}), "Content-Length": str(HUGE)}
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, path, headers) + b'{"name": "')

        status, body = read_answer(sock)

    error = _error(status, body, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"limit_bytes": LIMIT} and "TUNELAB_BODY_MAX_BYTES" in error["message"]


@pytest.mark.parametrize(("path", "with_token"), [("/auth/sign-in", False), ("/projects", True)],
                         ids=["public-without-token", "with-token"])
def test_a_chunked_body_is_refused_as_it_grows_past_the_limit(limited_api, auth_headers, path, with_token):
    headers = {**(auth_headers if with_token else {}), "Transfer-Encoding": "chunked"}
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, path, headers))
        sent = _stream_until_answered(sock)

        status, body = read_answer(sock)

    assert _error(status, body, 413, "PAYLOAD_TOO_LARGE")["details"] == {"limit_bytes": LIMIT}
    assert sent < SEND_AT_MOST


def test_a_metrics_batch_has_a_larger_limit_of_its_own(limited_api, auth_headers, settings):
    """A batch of 10,000 points is larger than the JSON limit and taken; past its own limit it is 413 at once."""
    run = json.loads(_post(limited_api, "/runs", auth_headers, json.dumps(EXTERNAL_RUN).encode())[1])
    points = [{"key": "train/loss", "step": step, "value": 0.5} for step in range(MAX_POINTS_PER_BATCH)]
    status, answer = _post(limited_api, f"/runs/{run['id']}/metrics", auth_headers,
                           json.dumps({"points": points}).encode())
    assert status == 200 and json.loads(answer)["accepted"] == MAX_POINTS_PER_BATCH, answer

    headers = {**auth_headers, "Content-Length": str(settings.metrics_body_max_bytes + 1)}
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, f"/runs/{run['id']}/metrics", headers) + b'{"points": [')

        status, body = read_answer(sock)

    error = _error(status, body, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"limit_bytes": settings.metrics_body_max_bytes}
    assert "TUNELAB_METRICS_BODY_MAX_BYTES" in error["message"]


def _post(base_url: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    import httpx

    response = httpx.post(f"{base_url}{API}{path}", headers={**headers, "Content-Type": "application/json"},
                          content=body, timeout=60)
    return response.status_code, response.content


# JSON past its bounds: a 422 naming the problem, never a 500 ---------------------------------------------------------

def _nested(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize("path", ["/auth/sign-in", "/projects", "/metrics/query"])
def test_a_deeply_nested_body_holding_a_nul_is_422_not_500(admin, http, path):
    caller = http if path == "/auth/sign-in" else admin
    raw = '{"email": %s, "name": %s, "run_ids": [1]}' % ((_nested(2500, '"\\u0000"'),) * 2)

    response = caller.post(API + path, content=raw.encode(), headers={"Content-Type": "application/json"})

    error = error_of(response, 422, "VALIDATION_ERROR")
    assert error["details"][0]["type"] == "json_too_deep" and f"deeper than {MAX_DEPTH} levels" in error["message"]


def test_nesting_past_the_bound_is_422_naming_where(admin):
    raw = json.dumps({"method": "lora", "model": "tunelab-tiny", "external": True,
                      "params": {"a": json.loads(_nested(MAX_DEPTH, "1"))}})

    error = error_of(admin.post(f"{API}/runs", content=raw.encode(), headers={"Content-Type": "application/json"}),
                     422, "VALIDATION_ERROR")

    assert error["details"][0]["field"] == "params.a" + ".0" * (MAX_DEPTH - 2)


def test_a_deeply_nested_metrics_batch_is_422_on_the_route_and_on_the_fast_path(admin):
    run = admin.post(f"{API}/runs", json=EXTERNAL_RUN).json()
    url = f"{API}/runs/{run['id']}/metrics"
    ok = admin.post(url, json={"points": [{"key": "loss", "step": 0, "value": 1.0}]})  # the caller is remembered
    assert ok.status_code == 200, ok.text

    for inner in ('"\\u0000"', "1"):
        raw = '{"points": [{"key": "loss", "step": 1, "value": 1.0}], "extra": %s}' % _nested(5000, inner)
        response = admin.post(url, content=raw.encode(), headers={"Content-Type": "application/json"})
        error_of(response, 422, "VALIDATION_ERROR")
    assert [s["step"] for s in admin.get(url).json()["series"]] == [[0]]


# Metrics batches over the point limit ----------------------------------------------------------------------------

def test_a_batch_over_the_point_limit_is_refused_from_its_count_before_any_point_is_validated(admin):
    run = admin.post(f"{API}/runs", json=EXTERNAL_RUN).json()
    url = f"{API}/runs/{run['id']}/metrics"
    assert admin.post(url, json={"points": [{"key": "loss", "step": 0, "value": 1.0}]}).status_code == 200
    # The first point is invalid too: a server that validated the list would name it.
    points = [{"key": "loss", "step": -1, "value": 1.0},
              *({"key": "loss", "step": step, "value": 1.0} for step in range(1, MAX_POINTS_PER_BATCH + 1))]

    error = error_of(admin.post(url, json={"points": points}), 422, "VALIDATION_ERROR")

    assert [(d["field"], d["type"]) for d in error["details"]] == [("points", "too_long")]
    assert error["message"] == f"points: at most {MAX_POINTS_PER_BATCH:,} points per batch, not {len(points):,}"
    assert [s["step"] for s in admin.get(url).json()["series"]] == [[0]]
