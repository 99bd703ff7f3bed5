"""The access log that `tunelab api` writes itself, in batches (api/access_log.py): uvicorn's line for every request,
written a moment later or at shutdown, never twice and never lost on SIGTERM."""

import asyncio
import io
import logging
import re

import httpx
import pytest
from starlette.requests import Request

from tests.conftest import ApiProcess, fresh_install, wait_for
from tunelab.api import access_log
from tunelab.api.access_log import AccessLog
from tunelab.api.failures import internal_error


async def _answer(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 404 if "missing" in scope["path"] else 200,
                "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _request(path: str, query: bytes = b"") -> dict:
    return {"type": "http", "method": "GET", "path": path, "query_string": query, "http_version": "1.1",
            "client": ("127.0.0.1", 51234), "headers": []}


def test_lines_are_uvicorns_and_wait_at_most_a_moment(monkeypatch):
    monkeypatch.setattr(access_log, "FLUSH_S", 0.05)
    stream = io.StringIO()
    app = AccessLog(_answer, stream)

    async def two_requests() -> str:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_message) -> None:
            pass

        await app(_request("/api/v1/runs", b"status=running&tag=a b"), receive, send)
        await app(_request("/api/v1/runs/7/missing file"), receive, send)
        written_at_once = stream.getvalue()
        await asyncio.sleep(0.2)
        return written_at_once

    assert asyncio.run(two_requests()) == "", "lines wait for the next flush"
    assert stream.getvalue().splitlines() == [
        'INFO:     127.0.0.1:51234 - "GET /api/v1/runs?status=running&tag=a b HTTP/1.1" 200 OK',
        'INFO:     127.0.0.1:51234 - "GET /api/v1/runs/7/missing%20file HTTP/1.1" 404 Not Found',
    ]


def test_a_full_batch_is_written_at_once(monkeypatch):
    monkeypatch.setattr(access_log, "MAX_LINES", 3)
    stream = io.StringIO()
    app = AccessLog(_answer, stream)

    async def requests(count: int) -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_message) -> None:
            pass

        for _ in range(count):
            await app(_request("/api/v1/health"), receive, send)

    asyncio.run(requests(4))
    assert len(stream.getvalue().splitlines()) == 3


def test_tunelab_api_logs_every_request_once_and_loses_none_at_shutdown(assets, redis_url, tmp_path):
    env = fresh_install(tmp_path, assets, "access-log")
    log_path = tmp_path / "api.log"
    server = ApiProcess(log_path, env)
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            client.get("/api/v1/health", params={"probe": "1"}).raise_for_status()
            wait_for(lambda: '"GET /api/v1/health?probe=1 HTTP/1.1" 200 OK' in log_path.read_text(), 30, 0.05,
                     "the request's line, a moment later")
            assert client.get("/api/v1/runs/1", params={"probe": "2"}).status_code == 401
    finally:
        server.stop()

    lines = log_path.read_text().splitlines()
    client_address = r"INFO:     127\.0\.0\.1:\d+ - "
    for request_line in (r'"GET /api/v1/health\?probe=1 HTTP/1\.1" 200 OK',
                         r'"GET /api/v1/runs/1\?probe=2 HTTP/1\.1" 401 Unauthorized'):  # the last written at shutdown
        assert sum(bool(re.fullmatch(client_address + request_line, line)) for line in lines) == 1, request_line


# Share and invitation tokens are redacted -----------------------------------------------------------------------------

TOKEN = "Xq3-tOkEn_that_opens_a_share"


@pytest.mark.parametrize(("path", "query", "logged"), [
    (f"/s/{TOKEN}", b"", "/s/REDACTED"),
    (f"/api/v1/shared/{TOKEN}", b"", "/api/v1/shared/REDACTED"),
    ("/api/v1/runs/7/events", f"after=3&share={TOKEN}".encode(), "/api/v1/runs/7/events?after=3&share=REDACTED"),
    ("/api/v1/artifacts/9", f"sh%61re={TOKEN}&download=1".encode(), "/api/v1/artifacts/9?sh%61re=REDACTED&download=1"),
    (f"/invite/{TOKEN}", b"", "/invite/REDACTED"),
    (f"/api/v1/auth/invites/{TOKEN}", b"", "/api/v1/auth/invites/REDACTED"),
    ("/api/v1/auth/invites/accept", b"", "/api/v1/auth/invites/accept"),
    ("/api/v1/runs", b"shared=1&name=s", "/api/v1/runs?shared=1&name=s"),
])
def test_a_line_names_the_page_and_not_the_token_that_opens_it(path, query, logged):
    stream = io.StringIO()
    log = AccessLog(_answer, stream)

    async def one_request() -> None:
        log.note(_request(path, query), 200)
        log.flush()

    asyncio.run(one_request())
    assert stream.getvalue() == f'INFO:     127.0.0.1:51234 - "GET {logged} HTTP/1.1" 200 OK\n'


def test_uvicorns_own_access_line_is_redacted_when_it_serves_the_app(app, caplog):
    """`uvicorn tunelab.main:create_app` writes its own access log (`tunelab api` turns it off)."""
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:51234", "GET",
                                                 f"/s/{TOKEN}?share={TOKEN}", "1.1", 200)

    assert caplog.messages == ['127.0.0.1:51234 - "GET /s/REDACTED?share=REDACTED HTTP/1.1" 200']


def test_an_unexpected_error_is_logged_without_the_token_in_its_path(caplog):
    request = Request({"type": "http", "method": "GET", "path": f"/api/v1/shared/{TOKEN}", "query_string": b"",
                       "headers": [], "state": {"request_id": "r" * 32}})

    with caplog.at_level(logging.ERROR, logger="tunelab.api"):
        response = asyncio.run(internal_error(request, RuntimeError("boom")))

    assert response.status_code == 500
    assert caplog.messages == [f"unexpected error (request id {'r' * 32}) in GET /api/v1/shared/REDACTED"]


def test_tunelab_api_writes_no_share_token_in_its_log(assets, redis_url, tmp_path):
    env = fresh_install(tmp_path, assets, "redacted-log")
    log_path = tmp_path / "api.log"
    server = ApiProcess(log_path, env)
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            for path, params in ((f"/s/{TOKEN}", {}), (f"/api/v1/shared/{TOKEN}", {}),
                                 ("/api/v1/runs/1/events", {"share": TOKEN}), (f"/invite/{TOKEN}", {})):
                client.get(path, params=params)
    finally:
        server.stop()  # every line is written by then

    log = log_path.read_text()
    assert TOKEN not in log
    for target in ("/s/REDACTED", "/api/v1/shared/REDACTED", "/api/v1/runs/1/events?share=REDACTED",
                   "/invite/REDACTED"):
        assert f'"GET {target} HTTP/1.1" ' in log, target
