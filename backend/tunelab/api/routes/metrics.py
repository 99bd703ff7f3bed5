import time
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from tunelab.api.deps import SessionDep
from tunelab.api.policies import ReaderDep, RunMetricsLogger, RunReader
from tunelab.api.routes.runs import ExportFormatQuery, download
from tunelab.core.errors import responses
from tunelab.core.text import INVALID_CHAR_MESSAGE, invalid_json_field
from tunelab.schemas.common import MAX_BIGINT
from tunelab.schemas.metrics import (
    DEFAULT_MAX_POINTS,
    MAX_POINTS_PER_BATCH,
    MaxPoints,
    MetricBatchIn,
    MetricBatchPublic,
    MetricSeriesPublic,
    MetricsQuery,
    MetricsQueryPublic,
    RunMetricsPublic,
    count_points,
)
from tunelab.services import metrics as metrics_service
from tunelab.services.accounts import access
from tunelab.services.metrics import MetricPoint
from tunelab.services.metrics.downsample import SeriesData
from tunelab.services.runs import table_exports

router = APIRouter(tags=["metrics"])


def _run_metrics(run_id: int, series: dict[str, SeriesData]) -> RunMetricsPublic:
    return RunMetricsPublic.model_construct(run_id=run_id, series=[_series(key, data) for key, data in series.items()])


def _series(key: str, series: SeriesData) -> MetricSeriesPublic:
    # Constructed, not validated: a series of 10^5 points was read from the database, not sent by a client.
    return MetricSeriesPublic.model_construct(
        key=key, count=series.count, downsampled=series.downsampled, step=series.step, value=series.value,
        wall_time=series.wall_time, min=series.min, max=series.max, next_after_step=series.next_after_step)


@router.get("/runs/{run_id}/metrics", response_model=RunMetricsPublic, responses=responses(401, 404, 422))
def read_run_metrics(
    run: RunReader,
    session: SessionDep,
    keys: Annotated[str | None, Query(description="Comma-separated keys; every key of the run when omitted")] = None,
    max_points: Annotated[MaxPoints, Query()] = DEFAULT_MAX_POINTS,
    after_step: Annotated[int | None, Query(
        ge=-1, le=MAX_BIGINT,
        description="Read at full resolution, never bucketed: max_points points at most per series with a step "
                    "above this one (-1 for the start), and next_after_step to continue; for series of any length"
    )] = None,
) -> RunMetricsPublic:
    key_list = [key for key in keys.split(",") if key] if keys is not None else None
    if after_step is not None:
        return _run_metrics(run.id, metrics_service.read_page(session, run.id, key_list, after_step, max_points))
    return _run_metrics(run.id, metrics_service.read_series(session, run.id, key_list, max_points))


@router.get("/runs/{run_id}/metrics/export", response_class=StreamingResponse,
            responses={**responses(401, 404, 422), 200: {"content": {"text/csv": {}, "application/json": {}}}})
def export_run_metrics(run: RunReader, export_format: ExportFormatQuery = "csv") -> StreamingResponse:
    """Every logged point of the run (key, step, value, wall_time), ordered by key and step, at full resolution:
    never downsampled, unlike GET /runs/{run_id}/metrics."""
    return download(table_exports.export_metrics(run.id, export_format), export_format, f"run-{run.id}-metrics")


@router.post("/metrics/query", response_model=MetricsQueryPublic, responses=responses(401, 404, 422))
def query_metrics(query: MetricsQuery, session: SessionDep, principal: ReaderDep) -> MetricsQueryPublic:
    """A read, though a POST (the run list can be long): any run the caller cannot read answers 404."""
    access.runs(session, principal, query.run_ids)
    by_run = metrics_service.read_many(session, query.run_ids, query.keys, query.max_points)
    return MetricsQueryPublic.model_construct(data=[_run_metrics(run_id, series) for run_id, series in by_run.items()])


def batch_points(batch: MetricBatchIn) -> list[MetricPoint]:
    """The batch as the tuples ingest stores; a point sent without wall_time gets the time it was received."""
    received_at = time.time()
    return [(point["key"], point["step"], point["value"], point.get("wall_time") or received_at)
            for point in batch.points]


def _validated_batch(body: bytes) -> MetricBatchIn:
    """The batch in `body`, or the 422 naming what is wrong. A batch over MAX_POINTS_PER_BATCH is refused from a count
    of its points before any is validated (validating a million took 18 s). The characters no column can hold are
    checked here too: InvalidCharactersMiddleware leaves this body to the route. Blocking for up to
    TUNELAB_METRICS_BODY_MAX_BYTES of JSON: called on a thread."""
    points = count_points(body)
    if points is not None and points > MAX_POINTS_PER_BATCH:
        raise RequestValidationError([{"loc": ("body", "points"), "type": "too_long",
                                       "msg": f"at most {MAX_POINTS_PER_BATCH:,} points per batch, not {points:,}"}])
    if (field := invalid_json_field(body)) is not None:
        raise RequestValidationError([{"loc": ("body", *field.split(".")), "msg": INVALID_CHAR_MESSAGE,
                                       "type": "string_invalid_character"}])
    try:
        return MetricBatchIn.model_validate_json(body)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None


# Requests of a caller and run the process remembers are answered by api/ingest_fast_path.py instead, as this would.
@router.post(
    "/runs/{run_id}/metrics",
    response_model=MetricBatchPublic,
    responses=responses(401, 403, 404, 409, 413, 422),
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/MetricBatchIn"}}}}},
)
async def create_run_metrics(run: RunMetricsLogger, request: Request, session: SessionDep) -> MetricBatchPublic:
    """Batch ingest into an external run (409 for a run Tunelab trains), idempotent on (run, key, step). The hot path
    of external logging: the body (up to TUNELAB_METRICS_BODY_MAX_BYTES, else 413) is validated straight from its
    bytes (no intermediate Python dicts), and that and the database work run off the event loop."""
    batch = await run_in_threadpool(_validated_batch, await request.body())
    points = batch_points(batch)
    seq = await run_in_threadpool(metrics_service.ingest_external_points, session, run, points)
    return MetricBatchPublic(seq=seq, accepted=len(points))
