"""App factory: routers, the one error shape, and the built SPA."""

from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route
from starlette.types import Receive, Scope, Send

from tunelab import __version__
from tunelab.api.access_log import AccessLog, redact_uvicorn_access_log
from tunelab.api.body_limits import BodyLimitMiddleware
from tunelab.api.failures import DRIVER_ERRORS, app_error_response, database_error, internal_error
from tunelab.api.ingest_fast_path import MetricsIngestFastPath
from tunelab.api.middleware import InvalidCharactersMiddleware, RequestIdMiddleware
from tunelab.api.policies import route_policy_table
from tunelab.api.routes import (
    auth,
    datasets,
    estimates,
    exports,
    health,
    methods,
    metrics,
    models,
    pipelines,
    playground,
    projects,
    queues,
    runs,
    shares,
    studies,
    users,
)
from tunelab.api.security_headers import SecurityHeaders
from tunelab.core.errors import AppError, ErrorCode, error_payload
from tunelab.core.redis import release_embedded_redis
from tunelab.core.settings import get_settings

API_PREFIX = "/api/v1"
SPA_ROUTE_PATH = "/{path:path}"


def _field_path(loc: tuple) -> str:
    # ("body", "params", "learning_rate") -> "params.learning_rate"; the transport part says nothing to a user.
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts)


def _validation_details(errors: Sequence[Any]) -> list[dict]:
    return [{"field": _field_path(tuple(e.get("loc", ()))), "message": e.get("msg", ""), "type": e.get("type")}
            for e in errors]


HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> str:
    """The methods a 405's path has, for its Allow header. Starlette's names those of the first route that matched
    the path only, and `GET /runs` and `POST /runs` are two routes; under /api, the SPA's catch-all answers nothing."""
    path = request.url.path
    is_api = path == "/api" or path.startswith("/api/")
    routes = [route for route in request.app.router.routes
              if not (is_api and isinstance(route, Route) and route.path == SPA_ROUTE_PATH)]
    return ", ".join(method for method in HTTP_METHODS
                     if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes))


@asynccontextmanager
async def _lifespan(app: "TunelabAPI"):
    import anyio
    from anyio import to_thread
    from sqlalchemy.engine import make_url

    from tunelab.api.deps import get_broker
    from tunelab.db.loop_connections import LoopConnections, LoopSqlite
    from tunelab.services.catalog.bootstrap import register_bundled_assets
    from tunelab.services.live.live_hub import LiveHub, end_streams_on_exit_signals
    from tunelab.services.runs.reaper import start_reaper

    settings = get_settings()
    # Every sync handler and dependency runs on these threads; as many requests may hold a transaction (api/deps.py)
    # as the SQL pool has a connection for beside the live reads and the reaper (Settings.db_slots, db/session.py).
    to_thread.current_default_thread_limiter().total_tokens = settings.api_threads
    app.state.db_slots = anyio.Semaphore(settings.db_slots)
    # The metrics fast path's own connections, used on this loop (api/ingest_fast_path.py).
    database_url = make_url(settings.database_url)
    is_postgres = database_url.get_backend_name() == "postgresql"
    app.state.loop_connections = (LoopConnections(settings.database_url, settings.db_loop_connections)
                                  if is_postgres else None)
    database_file = database_url.database if database_url.get_backend_name() == "sqlite" else None
    app.state.loop_sqlite = LoopSqlite(database_file) if database_file and database_file != ":memory:" else None
    register_bundled_assets(settings)
    broker = app.dependency_overrides.get(get_broker, get_broker)()
    stop_reaper = start_reaper(settings, broker)
    app.state.live_hub = LiveHub(settings)
    await app.state.live_hub.start()
    end_streams_on_exit_signals()
    yield
    await app.state.live_hub.stop()
    if app.state.loop_connections is not None:
        await app.state.loop_connections.close()
    if app.state.loop_sqlite is not None:
        app.state.loop_sqlite.close()
    stop_reaper.set()
    release_embedded_redis()
    if app.access_log is not None:
        app.access_log.flush()


class TunelabAPI(FastAPI):
    """The app, entered through the metrics fast path before FastAPI's own entry: FastAPI's and Starlette's
    __call__, and Starlette's error and body-limit middleware and ours, cost ~15 % of a one-point batch's CPU. The
    fast path does what they would for the requests it answers (the request id, the character check, a 500 in the
    error shape, the access log's line) and hands every other one on, through the access log when the app writes
    one. Security headers are added outside Starlette's middleware, so that its 500 answers carry them too."""

    def __init__(self, *, access_log: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        app = SecurityHeaders(super().__call__, frozenset(p for p in (self.docs_url, self.redoc_url) if p))
        self.access_log = AccessLog(app) if access_log else None
        self._entry = MetricsIngestFastPath(self.access_log or app, self.access_log)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self  # as Starlette sets it, for the fast path's answers
        await self._entry(scope, receive, send)


def create_app(access_log: bool = False) -> FastAPI:
    """The app; with `access_log`, it writes uvicorn's access line for every request itself (api/access_log.py)."""
    # FastAPI's OpenTelemetry hooks are off: Tunelab configures no OpenTelemetry, and asking the providers whether
    # one was configured cost every request ~30 µs.
    app = TunelabAPI(title="Tunelab", version=__version__, openapi_url="/api/v1/openapi.json", docs_url="/api/docs",
                     lifespan=_lifespan, telemetry={"tracing": False, "metrics": False, "logs": False},
                     access_log=access_log)
    # `tunelab api` turns uvicorn's access log off; served by uvicorn directly, its lines name no token either.
    redact_uvicorn_access_log()

    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        return app_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = _validation_details(exc.errors())
        first = details[0] if details else {"field": "", "message": "invalid request"}
        message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
        return JSONResponse(error_payload("VALIDATION_ERROR", message, details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        named: dict[int, ErrorCode] = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        code = named.get(exc.status_code, "HTTP_ERROR")
        headers = {**(exc.headers or {}), "Allow": _allowed_methods(request)} if exc.status_code == 405 else exc.headers
        return JSONResponse(error_payload(code, str(exc.detail)), status_code=exc.status_code, headers=headers)

    app.add_exception_handler(SQLAlchemyError, database_error)
    for driver_error in DRIVER_ERRORS:
        app.add_exception_handler(driver_error, database_error)
    app.add_exception_handler(Exception, internal_error)
    # The last added runs first: every answer, a 413 or a 422 for a NUL included, carries the request id, and the body
    # is bounded (and the caller's presence checked) before InvalidCharactersMiddleware reads it.
    app.add_middleware(InvalidCharactersMiddleware)
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(RequestIdMiddleware)

    # Routes are matched in this order, one by one: metrics first, so the hot path of external logging (a batch a
    # second per run) is found among the first few routes instead of after every other router's.
    routers = [m.router for m in (metrics, auth, users, projects, runs, exports, datasets, shares, studies, pipelines,
                                  models, methods, queues, estimates, playground, health)]
    for router in routers:
        app.include_router(router, prefix=API_PREFIX)
    app.state.route_policies = route_policy_table(routers, API_PREFIX)
    _declare_raw_body_schemas(app)
    _serve_spa(app)
    return app


def create_served_app() -> FastAPI:
    """The app as `tunelab api` serves it: with its access log, which uvicorn then does not write (cli.cmd_api)."""
    return create_app(access_log=True)


NOT_BUILT_PAGE = """<!doctype html><title>Tunelab</title><body style="font-family:system-ui;padding:40px">
<h1>Tunelab's API is running, but its web UI is not built</h1>
<p>Run <code>make up</code> (it builds the UI with npm), or <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>.
The API is at <a href="/api/docs">/api/docs</a>.</p></body>"""


def _serve_spa(app: FastAPI) -> None:
    """The built React app at /: files by path, index.html for every other page so deep links survive a reload."""
    from fastapi.responses import FileResponse, HTMLResponse

    dist = get_settings().frontend_dir.resolve()

    @app.get(SPA_ROUTE_PATH, include_in_schema=False)
    def read_spa(path: str):
        if path == "api" or path.startswith("api/"):
            raise AppError("NOT_FOUND", f"no API route /{path}")
        index = dist / "index.html"
        if not index.is_file():
            return HTMLResponse(NOT_BUILT_PAGE, status_code=503)
        candidate = (dist / path).resolve()
        if path and candidate.is_relative_to(dist) and candidate.is_file():
            return FileResponse(candidate)
        return FileResponse(index, headers={"Cache-Control": "no-cache"})


def _declare_raw_body_schemas(app: FastAPI) -> None:
    """Routes that validate their body themselves (the metrics hot path from raw bytes, the dataset upload after
    the caller is checked) refer to its schema by name; put those schemas into the OpenAPI components so the
    generated client knows them."""
    from fastapi.openapi.utils import get_openapi

    from tunelab.schemas.datasets import DatasetUpload
    from tunelab.schemas.metrics import MetricBatchIn

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (MetricBatchIn, DatasetUpload):
                body_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(body_schema.pop("$defs", {}))
                components[model.__name__] = body_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend its schema
