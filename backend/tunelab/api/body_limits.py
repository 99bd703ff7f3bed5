"""Request bodies bounded before they are read. Every route has a limit: TUNELAB_BODY_MAX_BYTES for JSON (1 MiB),
TUNELAB_METRICS_BODY_MAX_BYTES for a metrics batch (room for its 10,000 points) and TUNELAB_UPLOAD_MAX_BYTES for a
dataset upload. A declared Content-Length over the limit is refused at once, and a body without one (chunked) is
counted as it arrives and refused as soon as it passes the limit: nothing past it is ever buffered. The refusal is a
413 in the error shape whose details name the limit.

Before that, a request with a body to a route that needs a caller but carrying no credential at all is refused with
the route's own 401, without reading its body: InvalidCharactersMiddleware behind this one, and FastAPI itself, read
a body before any dependency (the route's policy) runs. A credential that is there but wrong is refused by the route,
after the body, which this limit bounds.

FastAPI's own max_body_size does not fit: its limit is the app's or a route's, applied once routing is done, while
InvalidCharactersMiddleware reads the body before routing and the limit depends on the route.
"""

import re

from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunelab.api.middleware import METRICS_BATCH_PATH, send_error
from tunelab.api.routes.datasets import FORM_OVERHEAD_BYTES
from tunelab.core.errors import AppError, error_payload
from tunelab.core.security import SESSION_COOKIE, SHARE_HEADER
from tunelab.core.settings import Settings, get_settings

UPLOAD_PATH = "/api/v1/datasets"
_SHARE_HEADER = SHARE_HEADER.lower().encode()
# Present means "may be a credential": a false positive only leaves the check to the route, as before.
_SESSION_COOKIE = SESSION_COOKIE.encode() + b"="
_SHARE_QUERY = b"share="


class BodyTooLarge(Exception):
    """Raised from a receive once the body passed its limit, after the 413 is sent: it ends the request's app."""


class BodyLimitMiddleware:
    """The limits above, for every request that has a body; one without passes after a look at its headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._routes: list[tuple[str, re.Pattern[str], bool]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, chunked, credential = _body_headers(scope)
        if not declared and not chunked:
            await self.app(scope, receive, send)
            return
        if not credential and self._needs_caller(scope):
            await send_error(send, 401, error_payload(
                "AUTH_REQUIRED", "sign in, or send an API token as `Authorization: Bearer <token>`"))
            return
        settings: Settings = scope["app"].dependency_overrides.get(get_settings, get_settings)()
        limit, setting = body_limit(scope, settings)
        if declared is not None and declared > limit:
            await _refuse(send, limit, setting, settings)
            return
        body = _LimitedBody(receive, send, limit, setting, settings)
        try:
            await self.app(scope, body.receive, body.send)
        except BodyTooLarge:
            if not body.refused:
                raise  # the answer had started: the server ends the connection

    def _needs_caller(self, scope: Scope) -> bool:
        """Whether the route the request goes to has a policy other than `public` (api/policies.py); an unknown path
        or method needs no caller here (its answer is a 404 or 405). Matched against the app's route_policies, in
        the router's order."""
        if self._routes is None:
            self._routes = [(method, compile_path(path)[0], "public" not in policies)
                            for (method, path), policies in scope["app"].state.route_policies.items()]
        method, path = scope["method"], scope["path"]
        return next((needs for route_method, pattern, needs in self._routes
                     if route_method == method and pattern.match(path)), False)


def body_limit(scope: Scope, settings: Settings) -> tuple[int, str]:
    """The route's limit in bytes on the wire and the setting that moves it."""
    if scope["method"] == "POST":
        if scope["path"] == UPLOAD_PATH:  # the file and the form around it
            return settings.upload_max_bytes + FORM_OVERHEAD_BYTES, "TUNELAB_UPLOAD_MAX_BYTES"
        if METRICS_BATCH_PATH.fullmatch(scope["path"]):
            return settings.metrics_body_max_bytes, "TUNELAB_METRICS_BODY_MAX_BYTES"
    return settings.body_max_bytes, "TUNELAB_BODY_MAX_BYTES"


def payload_too_large(limit: int, setting: str, settings: Settings) -> AppError:
    # An upload's limit is said as its file's, without the form's overhead (services/catalog/datasets.upload_too_large).
    shown = settings.upload_max_bytes if setting == "TUNELAB_UPLOAD_MAX_BYTES" else limit
    return AppError("PAYLOAD_TOO_LARGE", f"the request body is larger than the limit of {shown:,} bytes ({setting})",
                    {"limit_bytes": shown})


async def _refuse(send: Send, limit: int, setting: str, settings: Settings) -> None:
    error = payload_too_large(limit, setting, settings)
    await send_error(send, error.status_code, error_payload(error.code, error.message, error.details))


class _LimitedBody:
    """The request's receive, counting the body's bytes; past the limit it answers 413 (unless the app's answer has
    started) and raises BodyTooLarge. The app's own answer to that failed read (FastAPI makes any error reading a
    body a 400) is not sent: the first answer is the one the client gets."""

    def __init__(self, receive: Receive, send: Send, limit: int, setting: str, settings: Settings) -> None:
        self._receive, self._send = receive, send
        self._limit, self._setting, self._settings = limit, setting, settings
        self._received = 0
        self._started = False
        self.refused = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            if self._received > self._limit:
                if not self._started:
                    self.refused = True
                    await _refuse(self._send, self._limit, self._setting, self._settings)
                raise BodyTooLarge
        return message

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self._started = True
        await self._send(message)


def _body_headers(scope: Scope) -> tuple[int | None, bool, bool]:
    """(Content-Length, whether the body is chunked, whether any credential may be there) in one pass."""
    declared, chunked = None, False
    credential = _SHARE_QUERY in scope["query_string"]
    for key, value in scope["headers"]:
        if key == b"content-length":
            declared = int(value) if value.isdigit() else None
        elif key == b"transfer-encoding":
            chunked = True
        elif key == b"authorization" or key == _SHARE_HEADER or (key == b"cookie" and _SESSION_COOKIE in value):
            credential = True
    return declared, chunked, credential

