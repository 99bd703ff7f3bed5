"""Dataset uploads against a real API process with a small upload limit, over raw sockets so the test controls
what is sent and when: the caller and Content-Length are checked before the body is read, and a body that grows
past the limit is refused while it streams, with nothing stored."""

import json
import os
import select
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ApiProcess
from tests.raw_http import open_socket, read_answer, request_head

LIMIT = 4096
BOUNDARY = b"tunelab-upload"
PART_HEAD = (b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="file"; filename="rows.jsonl"\r\n'
             b"Content-Type: application/jsonl\r\n\r\n")


@pytest.fixture(scope="module")
def limited_api(migrated_db, assets, redis_url, data_dir):
    server = ApiProcess(data_dir / "api-upload-limit.log", {**os.environ, "TUNELAB_UPLOAD_MAX_BYTES": str(LIMIT)})
    yield server.base_url
    server.stop()


def _head(base_url: str, headers: dict[str, str]) -> bytes:
    return request_head(base_url, "/api/v1/datasets", f"multipart/form-data; boundary={BOUNDARY.decode()}", headers)


def _readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def _rows() -> Iterator[bytes]:
    """An endless stream of valid JSONL rows."""
    n = 0
    while True:
        yield b"".join(json.dumps({"text": f"row {n + i} " + "x" * 100}).encode() + b"\n" for i in range(64))
        n += 64


def _dataset_count(base_url: str, headers: dict[str, str]) -> int:
    return httpx.get(f"{base_url}/api/v1/datasets", headers=headers, timeout=30).json()["count"]


def _error(status: int, body: dict, expected_status: int, code: str) -> dict:
    assert status == expected_status, body
    assert list(body) == ["error"] and body["error"]["code"] == code, body
    return body["error"]


def test_a_content_length_over_the_limit_is_413_before_the_body_is_sent(limited_api, auth_headers):
    before = _dataset_count(limited_api, auth_headers)
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, {**auth_headers, "Content-Length": str(10**12)}) + PART_HEAD)
        started = time.monotonic()

        status, body = read_answer(sock)

    error = _error(status, body, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"limit_bytes": LIMIT}
    assert time.monotonic() - started < 10
    assert _dataset_count(limited_api, auth_headers) == before


def test_an_unauthenticated_upload_is_401_before_the_body_is_sent(limited_api):
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, {"Content-Length": "1000000"}) + PART_HEAD)

        status, body = read_answer(sock)

    _error(status, body, 401, "AUTH_REQUIRED")


def test_a_chunked_body_is_refused_as_it_grows_past_the_limit_and_nothing_is_stored(limited_api, auth_headers,
                                                                                    settings):
    before, files_before = _dataset_count(limited_api, auth_headers), set(settings.dataset_dir.glob("*"))
    sent = 0
    with open_socket(limited_api) as sock:
        sock.sendall(_head(limited_api, {**auth_headers, "Transfer-Encoding": "chunked"}))
        # The body never ends: a server that waited for all of it before checking would never answer.
        for rows in _rows():
            if _readable(sock) or sent > 64 * 1024 * 1024:
                break
            piece = (PART_HEAD if sent == 0 else b"") + rows
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)

        status, body = read_answer(sock)

    _error(status, body, 413, "PAYLOAD_TOO_LARGE")
    assert sent < 64 * 1024 * 1024
    assert _dataset_count(limited_api, auth_headers) == before
    assert set(settings.dataset_dir.glob("*")) == files_before


def test_an_upload_within_the_limit_is_stored(limited_api, auth_headers):
    rows = b"".join(json.dumps({"text": f"small {i} {time.time_ns()}"}).encode() + b"\n" for i in range(3))
    response = httpx.post(f"{limited_api}/api/v1/datasets", headers=auth_headers, timeout=30,
                          files={"file": ("small.jsonl", rows, "application/jsonl")}, data={"format": "text"})
    assert response.status_code == 201, response.text
    assert response.json()["row_count"] == 3 and response.json()["name"] == "small"
