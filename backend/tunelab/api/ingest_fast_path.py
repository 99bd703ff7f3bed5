"""The metrics hot path, `POST /api/v1/runs/{run_id}/metrics`, answered without FastAPI's routing and dependency
solving when this process already knows everything the route's policy would read.

An SDK flushes a batch a second per run, and a script that logs point by point sends many more; through FastAPI
each request cost ~1.5 ms of server CPU before and around its few SQL statements (matching ~100 routes, solving
the session, principal and run policies, two hops to a thread). This ASGI middleware is the app's entry, before
FastAPI's own (main.TunelabAPI), and takes a request only when:

- it carries an API token that principal_cache remembers, with the editor role (or higher) in the run's project;
- services/runs/run_refs remembers the run, and it is external (both checked before the body is read);
- it declares a Content-Length within LOOP_DECODE_MAX_BYTES and TUNELAB_METRICS_BODY_MAX_BYTES (so the body it reads
  is bounded, and decoding it holds the loop ~5 ms at most);
- the body is JSON with no escape that can make a character no column holds, and a batch MetricBatchIn surely
  accepts (schemas/metrics.FastMetricBatch, decoded by msgspec).

Then it stores the batch and commits, exactly as the route does (services/metrics), on the event loop where that
cannot wait (db/loop_connections: on PostgreSQL by one statement, on SQLite a small batch when nobody else writes)
and on a thread otherwise; and it answers as the route would, with the request id and, for an unexpected error, the
500 that ServerErrorMiddleware's handler gives, and notes its answer in the access log. Everything else (a first
request, a browser session, a share link, a larger or chunked body, a bad body, a refusal) goes on to the app, with
the body unread when the caller or its size decided, where api/body_limits bounds it and the route answers and, on
success, fills the caches for the next request.
The route, its policy and the OpenAPI document stay the definition; this is only the shortcut for the caller they
already let in. Revocation is as immediate as on the route: the caches it reads are the route's own.
"""

import asyncio
import re
import time

import anyio
import msgspec
from fastapi import Request
from sqlalchemy.exc import SQLAlchemyError
from starlette.datastructures import State
from starlette.types import ASGIApp, Receive, Scope, Send

from tunelab.api.access_log import AccessLog
from tunelab.api.failures import DRIVER_ERRORS, app_error_response, database_error, internal_error
from tunelab.api.middleware import (
    content_length,
    is_clean_json_request,
    read_body,
    replay_body,
    request_id_for,
    send_with_request_id,
)
from tunelab.api.security_headers import send_with_security_headers
from tunelab.core.errors import AppError
from tunelab.core.settings import get_settings
from tunelab.core.text import may_hold_invalid_chars
from tunelab.db.models import Role
from tunelab.db.session import get_engine
from tunelab.schemas.metrics import fast_metric_batch
from tunelab.services import metrics as metrics_service
from tunelab.services.accounts import principal_cache
from tunelab.services.live.events import publish_metrics_now, publish_metrics_soon
from tunelab.services.metrics import Driver, MetricPoint
from tunelab.services.runs import run_refs
from tunelab.services.runs.run_refs import RunRef

# The route's path with a run id the route's ResourceId accepts (1 … 2^63-1 fits in 19 digits; the route checks the
# range of anything longer).
_INGEST_PATH = re.compile(r"/api/v1/runs/([1-9][0-9]{0,17})/metrics")
# The largest body decoded here, on the event loop: a full batch of typical points (~80 bytes each) fits, and msgspec
# decodes it in a few ms. A larger one is the route's, which counts its points and validates them on a thread.
LOOP_DECODE_MAX_BYTES = 1024 * 1024


class MetricsIngestFastPath:
    """The shortcut, in front of `app`; it notes the requests it answers itself in `access_log`, if there is one (the
    app's others are noted by `app`)."""

    def __init__(self, app: ASGIApp, access_log: AccessLog | None = None) -> None:
        self.app = app
        self.access_log = access_log
        self.max_body_bytes = min(LOOP_DECODE_MAX_BYTES, get_settings().metrics_body_max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or (
                match := _INGEST_PATH.fullmatch(scope["path"])) is None:
            await self.app(scope, receive, send)
            return
        declared, run = content_length(scope), None
        if declared is not None and declared <= self.max_body_bytes and is_clean_json_request(scope):
            run = _run_to_log_into(scope, int(match[1]))
        if run is None:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)  # the server stops it at the declared length
        if body is None:
            return  # the client left before its body was complete: there is no one to answer
        points = None if may_hold_invalid_chars(body) else _points(body)
        if points is None:
            await self.app(scope, replay_body(body, receive), send)
            return
        rid = request_id_for(scope)
        try:
            seq = await _in_a_slot(scope["app"].state, run, points)
        except Exception as exc:  # outside ServerErrorMiddleware here: every failure is answered here
            await self._answer_failure(scope, receive, send, exc)
            return
        # MetricBatchPublic, as the route answers it, formatted here: building and dumping the model was ~4 % of a
        # one-point batch's CPU.
        content = b'{"seq":%d,"accepted":%d}' % (seq, len(points))
        if self.access_log is not None:
            self.access_log.note(scope, 200)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(content)),
                                (b"x-request-id", rid.encode()),
                                # Of the app's security headers (api/security_headers) only the one that means
                                # something to JSON read by a script: a CSP or framing rule would only add bytes.
                                (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": content})

    async def _answer_failure(self, scope: Scope, receive: Receive, send: Send, exc: Exception) -> None:
        """What the route would answer for this failure, with the request id (and noted in the access log)."""
        send = send_with_security_headers(send_with_request_id(scope, send))
        if self.access_log is not None:
            send = self.access_log.noting(scope, send)
        if isinstance(exc, AppError):  # e.g. the remembered run was deleted meanwhile: the route's answer
            response = app_error_response(exc)
        elif isinstance(exc, (SQLAlchemyError, *DRIVER_ERRORS)):
            response = await database_error(Request(scope), exc)
        else:  # the answer ServerErrorMiddleware's handler gives
            response = await internal_error(Request(scope), exc)
        await response(scope, receive, send)


# SQLite writes a batch this small on the event loop in ~0.1-0.5 ms, less than the hop to a thread costs; a larger one
# goes to a thread, where SQLite lets go of the GIL and other requests go on meanwhile.
LOOP_WRITE_MAX_POINTS = 64


async def _in_a_slot(state: State, run: RunRef, points: list[MetricPoint]) -> int:
    """The batch stored and committed while holding one of the app's db_slots, the same bound on transactions as
    every route (api/deps.py): on the event loop when that cannot wait (db/loop_connections) — on PostgreSQL by
    one statement (metrics.store_at_once), on SQLite when the batch is small and no other writer holds the
    database — else by _store on a thread. Plain asyncio instead of anyio's checkpoints and worker threads: each
    of those asks asyncio for the running loop, which is a getpid() system call in CPython, and they were a fifth
    of a request's CPU here."""
    slots: anyio.Semaphore = state.db_slots
    try:
        slots.acquire_nowait()
    except anyio.WouldBlock:
        await slots.acquire()
    try:
        seq = None
        if state.loop_connections is not None:
            seq = await metrics_service.store_at_once(state.loop_connections, run, points)
        elif state.loop_sqlite is not None and len(points) <= LOOP_WRITE_MAX_POINTS:
            with state.loop_sqlite.write_now() as connection:
                if connection is not None:
                    seq = metrics_service.commit_external_points(Driver(connection, "sqlite"), run, points)
        if seq is not None:
            publish_metrics_soon(run.id, seq)
            return seq
        return await asyncio.get_running_loop().run_in_executor(None, _store, run, points)
    finally:
        slots.release()


def _run_to_log_into(scope: Scope, run_id: int) -> RunRef | None:
    """The run when the route would surely let this caller log into it; None when the route must decide (it reads
    what is not remembered, and words every refusal)."""
    bearer = _bearer(scope)
    roles = principal_cache.recall_token_roles(bearer) if bearer is not None else None
    run = run_refs.recall(run_id) if roles is not None else None
    if roles is None or run is None or not run.external:
        return None
    role = roles.get(run.project_id)
    return run if role is not None and role.allows(Role.editor) else None


def _points(body: bytes) -> list[MetricPoint] | None:
    """The batch's points when the route would surely accept them; None when the route must decide."""
    try:
        batch = fast_metric_batch.decode(body)
    # DecodeError covers ValidationError; an unknown field nested past the recursion limit raises RecursionError.
    except (msgspec.DecodeError, RecursionError):
        return None
    received_at = time.time()
    # As the route's batch_points: a point without wall_time gets the time of receipt.
    return [(point.key, point.step, point.value, point.wall_time or received_at) for point in batch.points]


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


def _store(run: RunRef, points: list[MetricPoint]) -> int:
    # The pool's driver connection, with no SQLAlchemy Connection or ORM session around it: their bookkeeping cost
    # more than a small batch's statements (services/metrics.Driver). Returned to the pool, it is rolled back unless
    # committed. Live views hear of the flush after the commit, as ingest_points arranges on a session.
    engine = get_engine()
    pooled = engine.raw_connection()
    try:
        seq = metrics_service.commit_external_points(Driver(pooled.driver_connection, engine.dialect.name), run, points)
    finally:
        pooled.close()
    publish_metrics_now(run.id, seq)
    return seq

