"""What the client sees when something fails that is not its fault: the one error shape, a request id to quote,
and no internals (the traceback goes to the log under the same id)."""

import logging
import math
import sqlite3
import uuid

import asyncpg
import psycopg
from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc

from tunelab.api.access_log import redacted_path
from tunelab.api.middleware import REQUEST_ID_HEADER, request_id
from tunelab.core.errors import AppError, error_payload
from tunelab.db.loop_connections import LoopDatabaseUnavailable

log = logging.getLogger("tunelab.api")

RETRY_AFTER_S = 5


def _request_id(request: Request) -> str:
    return request_id(request.scope) or uuid.uuid4().hex


# The drivers' own errors: the metrics ingest path runs its statements on the driver (services/metrics.Driver), and
# its fast path on PostgreSQL by asyncpg on the event loop (db/loop_connections).
DRIVER_ERRORS = (sqlite3.Error, psycopg.Error, asyncpg.PostgresError, LoopDatabaseUnavailable)


def is_database_unavailable(exc: BaseException) -> bool:
    """A failure to reach the database (down, restarting, pool exhausted, SQLite locked), not a bug in a query."""
    if isinstance(exc, sa_exc.TimeoutError):
        return True
    driver_error: BaseException | None = exc
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        driver_error = exc.orig
    if isinstance(driver_error, psycopg.OperationalError | psycopg.InterfaceError | LoopDatabaseUnavailable):
        return True
    return isinstance(driver_error, sqlite3.OperationalError) and "database is locked" in str(driver_error)


def app_error_response(exc: AppError) -> JSONResponse:
    """A refusal the caller can act on, in the one error shape (the AppError handler's answer). A refusal that says
    when to try again (`retry_after_s` in its details: a 429, a 503) says it in Retry-After too, as HTTP clients and
    proxies read it."""
    retry_after = exc.details.get("retry_after_s") if isinstance(exc.details, dict) else None
    headers = {"Retry-After": str(max(1, math.ceil(retry_after)))} if isinstance(retry_after, int | float) else None
    return JSONResponse(error_payload(exc.code, exc.message, exc.details), status_code=exc.status_code,
                        headers=headers)


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    rid = _request_id(request)
    log.error("unexpected error (request id %s) in %s %s", rid, request.method, redacted_path(request.url.path),
              exc_info=exc)
    return JSONResponse(error_payload("INTERNAL_ERROR", f"unexpected error (request id {rid})", {"request_id": rid}),
                        status_code=500, headers={REQUEST_ID_HEADER: rid})


async def database_error(request: Request, exc: Exception) -> JSONResponse:
    if not is_database_unavailable(exc):
        return await internal_error(request, exc)
    rid = _request_id(request)
    log.warning("database unavailable (request id %s) in %s %s: %s", rid, request.method,
                redacted_path(request.url.path), str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return JSONResponse(
        error_payload("DATABASE_UNAVAILABLE", f"the database is unavailable; try again in {RETRY_AFTER_S} s",
                      {"request_id": rid, "retry_after_s": RETRY_AFTER_S}),
        status_code=503, headers={"Retry-After": str(RETRY_AFTER_S), REQUEST_ID_HEADER: rid})
