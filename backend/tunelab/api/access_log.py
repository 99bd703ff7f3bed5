"""The access log of `tunelab api`: uvicorn's line for every HTTP request, e.g.

    INFO:     127.0.0.1:51234 - "POST /api/v1/runs/7/metrics HTTP/1.1" 200 OK

written by the app in batches instead of by uvicorn's logger one request at a time. Through the logging module each
line cost ~35 µs of API CPU (a LogRecord and a copy of it, the formatter, a write and a flush), a tenth of a one-point
metrics batch. A line is written at most FLUSH_S after its response started (as nginx's buffered access_log), as soon
as MAX_LINES wait, and at shutdown (main._lifespan).

A line names the page, never the key to it: share tokens (`/s/<token>`, `/api/v1/shared/<token>`, `?share=<token>`)
and invitation tokens (`/invite/<token>`, `/api/v1/auth/invites/<token>`) are written as REDACTED, here and in
uvicorn's own access log when the app is served by uvicorn directly (RedactedUrls).
"""

import asyncio
import logging
import re
import sys
from http import HTTPStatus
from typing import TextIO
from urllib.parse import quote, unquote_plus

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunelab.api.policies import SHARE_QUERY_PARAM

FLUSH_S = 0.5
MAX_LINES = 1024
REDACTED = "REDACTED"

_STATUS = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}
_SECRET_PATH_PREFIXES = ("/s/", "/invite/", "/api/v1/shared/", "/api/v1/auth/invites/")
# `POST /api/v1/auth/invites/accept` carries its token in the body: "accept" is the route's own name.
_SECRET_PATH = re.compile(r"^(/s/|/invite/|/api/v1/shared/|/api/v1/auth/invites/(?!accept(?:/|$)))[^/]+")


def redacted_path(path: str) -> str:
    """`path` with the token of a share or invitation page replaced by REDACTED."""
    # A prefix test first: nearly every path (the metrics batches' included) has no token, and this runs for each.
    return _SECRET_PATH.sub(rf"\1{REDACTED}", path, count=1) if path.startswith(_SECRET_PATH_PREFIXES) else path


def redacted_query(query: str) -> str:
    """`query` with the value of every `share` parameter replaced by REDACTED, its name percent-encoded or not."""
    if SHARE_QUERY_PARAM not in query and "%" not in query:
        return query
    return "&".join(_redacted_parameter(part) for part in query.split("&"))


def _redacted_parameter(part: str) -> str:
    name, sep, _ = part.partition("=")
    return f"{name}={REDACTED}" if sep and unquote_plus(name) == SHARE_QUERY_PARAM else part


def redacted_target(target: str) -> str:
    """A request target as logged, `path?query`, with its tokens redacted."""
    path, sep, query = target.partition("?")
    return f"{redacted_path(path)}{sep}{redacted_query(query)}"


class RedactedUrls(logging.Filter):
    """For uvicorn's access logger, whose records carry the request target as their third argument."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5 and isinstance(record.args[2], str):
            record.args = (*record.args[:2], redacted_target(record.args[2]), *record.args[3:])
        return True


def redact_uvicorn_access_log() -> None:
    """Install RedactedUrls on uvicorn's access logger, once per process."""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(existing, RedactedUrls) for existing in logger.filters):
        logger.addFilter(RedactedUrls())


class AccessLog:
    """ASGI middleware writing the line of each HTTP request to `stream` (default: standard output, as uvicorn)."""

    def __init__(self, app: ASGIApp, stream: TextIO | None = None) -> None:
        self.app = app
        self._stream = stream
        self._lines: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, self.noting(scope, send))

    def noting(self, scope: Scope, send: Send) -> Send:
        """`send`, noting the request's line when its response starts."""
        async def send_noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.note(scope, message["status"])
            await send(message)

        return send_noted

    def note(self, scope: Scope, status: int) -> None:
        """The line of a request answered with `status` (for a layer outside this one that answers by itself)."""
        # As uvicorn's access formatter renders it, without colours.
        client = scope.get("client")
        path = redacted_path(quote(scope["path"]))
        if scope["query_string"]:
            path = f"{path}?{redacted_query(scope['query_string'].decode('ascii'))}"
        self._lines.append(f'INFO:     {"%s:%d" % tuple(client) if client else ""} - "{scope["method"]} {path} '
                           f'HTTP/{scope["http_version"]}" {_STATUS.get(status, status)}\n')
        if len(self._lines) == 1:
            asyncio.get_running_loop().call_later(FLUSH_S, self.flush)
        elif len(self._lines) >= MAX_LINES:
            self.flush()

    def flush(self) -> None:
        """Write the lines that wait."""
        lines, self._lines = self._lines, []
        if lines:
            stream = self._stream or sys.stdout
            stream.write("".join(lines))
            stream.flush()
