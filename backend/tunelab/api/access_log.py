"""The access log of `tunelab api`: uvicorn's line for every HTTP request, e.g.

    INFO:     127.0.0.1:51234 - "POST /api/v1/runs/7/metrics HTTP/1.1" 200 OK

written by the app in batches instead of by uvicorn's logger one request at a time. Through the logging module each
line cost ~35 µs of API CPU (a LogRecord and a copy of it, the formatter, a write and a flush), a tenth of a one-point
metrics batch. A line is written at most FLUSH_S after its response started (as nginx's buffered access_log), as soon
as MAX_LINES wait, and at shutdown (main._lifespan).
"""

import asyncio
import sys
from http import HTTPStatus
from typing import TextIO
from urllib.parse import quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

FLUSH_S = 0.5
MAX_LINES = 1024

_STATUS = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


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
        path = quote(scope["path"])
        if scope["query_string"]:
            path = f"{path}?{scope['query_string'].decode('ascii')}"
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
