"""Pure ASGI middleware (no response buffering, so the SSE stream flows): a request id on every response, and a 422
for characters no column can store and JSON past the bounds of core/json_limits, before any route sees them."""

import json
import re
from random import getrandbits
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunelab.core.errors import error_payload
from tunelab.core.json_limits import JsonProblem, json_problem
from tunelab.core.text import INVALID_CHAR, INVALID_CHAR_MESSAGE

REQUEST_ID_HEADER = "X-Request-ID"
_INCOMING_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}")


def request_id(scope: Scope) -> str | None:
    return scope.get("state", {}).get("request_id")


class RequestIdMiddleware:
    """Every response carries X-Request-ID (the caller's, if it sent a sane one), which the logs name too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, send_with_request_id(scope, send))


def send_with_request_id(scope: Scope, send: Send) -> Send:
    """`send` adding X-Request-ID to the response (request_id_for's)."""
    rid = request_id_for(scope)

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            if not any(key.lower() == b"x-request-id" for key, _ in headers):
                message["headers"] = [*headers, (b"x-request-id", rid.encode())]
        await send(message)

    return send_with_id


def request_id_for(scope: Scope) -> str:
    """The request's id: the caller's X-Request-ID if it sent a sane one, else a new one; kept in the scope for the
    logs and error payloads."""
    incoming = _header(scope, b"x-request-id")
    # 32 random hex digits, as uuid4().hex, without building a UUID or asking the kernel: an id names a request in
    # the logs, it guards nothing, so the process's own generator is enough (0.3 µs against 2.9 µs for a UUID).
    rid = incoming if incoming and _INCOMING_ID.fullmatch(incoming) else "%032x" % getrandbits(128)
    scope.setdefault("state", {})["request_id"] = rid
    return rid


# A metrics batch (up to TUNELAB_METRICS_BODY_MAX_BYTES) is validated from its bytes by its route, which counts its
# points before anything else (api/routes/metrics.py); this middleware leaves its body alone.
METRICS_BATCH_PATH = re.compile(r"/api/v1/runs/[^/]+/metrics")
# A body this small is checked on the event loop (~0.1 ms at most); a larger one on a thread.
LOOP_CHECK_MAX_BYTES = 16 * 1024


class InvalidCharactersMiddleware:
    """A NUL or lone surrogate in the path, the query or a JSON body, or a JSON body past the bounds of
    core/json_limits (nesting, string length, items), is a 422 naming the field. The body it reads is bounded by
    api/body_limits.BodyLimitMiddleware, in front of it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        field = _invalid_path_field(scope) or _invalid_query_field(scope["query_string"])
        problem = None if field is None else JsonProblem(field, INVALID_CHAR_MESSAGE, "string_invalid_character")
        if problem is None and _is_json(scope) and not (
                scope["method"] == "POST" and METRICS_BATCH_PATH.fullmatch(scope["path"])):
            body = await read_body(receive)
            if body is None:
                return  # the client left before its body was complete: there is no one to answer
            problem = json_problem(body) if len(body) <= LOOP_CHECK_MAX_BYTES else await run_in_threadpool(
                json_problem, body)
            receive = replay_body(body, receive)
        if problem is None:
            await self.app(scope, receive, send)
        else:
            await _reject(send, problem)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _is_json(scope: Scope) -> bool:
    for key, value in scope["headers"]:
        if key == b"content-type":
            if value == b"application/json":  # what nearly every client sends
                return True
            content_type = value.decode("latin-1").split(";", 1)[0].strip().lower()
            return content_type == "application/json" or content_type.endswith("+json")
    return False


def _invalid_path_field(scope: Scope) -> str | None:
    path = scope["path"]
    if not INVALID_CHAR.search(path):
        return None
    # Only now, on the rare bad request, find which path parameter it is in.
    for route in scope["app"].router.routes if "app" in scope else ():
        match, child = route.matches(scope)
        if match == Match.FULL:
            for name, value in child.get("path_params", {}).items():
                if isinstance(value, str) and INVALID_CHAR.search(value):
                    return name
    return "path"


def is_clean_json_request(scope: Scope) -> bool:
    """Whether the request says its body is JSON, and its path and query hold no invalid character."""
    return (_is_json(scope) and INVALID_CHAR.search(scope["path"]) is None
            and _invalid_query_field(scope["query_string"]) is None)


def content_length(scope: Scope) -> int | None:
    """The Content-Length the request declares; None when it declares none (a chunked body)."""
    for key, value in scope["headers"]:
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _invalid_query_field(query_string: bytes) -> str | None:
    # Starlette decodes the query with errors="replace", so no surrogate survives: NUL is the one to look for.
    if b"%00" not in query_string:
        return None
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if INVALID_CHAR.search(name) or INVALID_CHAR.search(value):
            return INVALID_CHAR.sub("", name) or "query"
    return None


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body; None when the client disconnected before sending all of it."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A receive that gives `body` (already read) first, for the app behind a middleware that read it."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body, the server's own receive tells of a disconnect

    return replay


async def _reject(send: Send, problem: JsonProblem) -> None:
    await send_error(send, 422, error_payload("VALIDATION_ERROR", f"{problem.field}: {problem.message}", [
        {"field": problem.field, "message": problem.message, "type": problem.type}]))


async def send_error(send: Send, status: int, payload: dict) -> None:
    """An answer in the one error shape, sent by a middleware before any route."""
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
