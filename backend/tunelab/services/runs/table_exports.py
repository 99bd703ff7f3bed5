"""CSV and JSON downloads of the run table (every matching run, not one page) and of a run's metric history at
full resolution. Both are streamed page by page, each page read in a short transaction of its own, so a slow
download holds no connection and a long history is never held in memory. A CSV's text cells are neutralised against
spreadsheet formulas (core.csv_cells)."""

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from sqlalchemy import select

from tunelab.core.csv_cells import text_cell
from tunelab.db.models import Run
from tunelab.db.session import session_scope
from tunelab.services import metrics
from tunelab.services.runs import runs

ExportFormat = Literal["csv", "json"]

RUNS_PAGE = 500
METRICS_PAGE = 10_000

# The parameters most runs are told apart by; a `param` filter's names are added to them.
KEY_PARAMS = ("learning_rate", "max_steps", "num_train_epochs", "per_device_train_batch_size",
              "gradient_accumulation_steps", "max_length", "r", "lora_alpha", "lora_dropout", "num_virtual_tokens")
SUMMARY_COLUMNS = ("best_eval_loss", "final_eval_loss", "latest_train_loss", "best_eval_perplexity",
                   "tokens_per_second", "wall_time_s", "trainable_params", "trainable_percent", "peak_memory_bytes")
METRIC_COLUMNS = ("key", "step", "value", "wall_time")


def _finite_or_none(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def run_columns(extra_params: Iterable[str] = ()) -> list[str]:
    params = list(dict.fromkeys([*KEY_PARAMS, *extra_params]))
    return ["id", "name", "status", "method", "objective", "model", "dataset", "tags", "seed",
            *(f"params.{name}" for name in params), *SUMMARY_COLUMNS]


def _dataset_name(run: Run) -> str | None:
    dataset = run.config.get("dataset") if isinstance(run.config, dict) else None
    if isinstance(dataset, dict) and dataset.get("name"):
        return str(dataset["name"])
    return str(run.dataset_id) if run.dataset_id is not None else None


def _run_records(query: runs.RunQuery, columns: list[str]) -> Iterator[dict[str, Any]]:
    """Every run `query` matches, by id, one page per transaction."""
    after_id = 0
    while True:
        with session_scope() as session:
            page = list(session.scalars(query.where(session, select(Run)).where(Run.id > after_id)
                                        .order_by(Run.id).limit(RUNS_PAGE)))
            public = runs.to_public_many(session, page)
        for run, item in zip(page, public, strict=True):
            params = run.config.get("params", {}) if isinstance(run.config, dict) else {}
            record: dict[str, Any] = {
                "id": run.id, "name": run.name, "status": run.status.value, "method": run.method,
                "objective": run.objective, "model": run.model, "dataset": _dataset_name(run), "tags": item.tags,
                "seed": run.seed,
            }
            for column in columns:
                if column.startswith("params."):
                    record[column] = params.get(column.removeprefix("params."))
                elif column in SUMMARY_COLUMNS:
                    record[column] = _finite_or_none(getattr(item, column))
            yield record
        if len(page) < RUNS_PAGE:
            return
        after_id = page[-1].id


def _csv_cell(value: Any) -> Any:
    """A value as a CSV cell. Text (names, tags, keys, params, JSON) is neutralised against formulas; numbers are not:
    a loss of -0.5 is a number the server writes, and a quote before it would make the spreadsheet read it as text."""
    if isinstance(value, list):
        # tags hold no commas; a param list (target modules) neither
        return text_cell(",".join(str(v) for v in value))
    if isinstance(value, dict):
        return text_cell(json.dumps(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        # The server's own spelling of a number, as the JSON export's readers know it: not text anyone typed.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return text_cell(value)
    return "" if value is None else value


def _as_csv(columns: list[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    # RFC 4180's line ending, and not only for Excel: the writer quotes a cell holding a character of its line
    # terminator, so with "\n" alone a bare "\r" in a name went out unquoted and a spreadsheet broke the row there.
    writer = csv.writer(buffer, lineterminator="\r\n")

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])
        count += 1
        if count % 1000 == 0:
            yield flush()
    yield flush()


def _as_json(records: Iterator[dict[str, Any]]) -> Iterator[str]:
    """A JSON array, one record at a time; non-finite numbers as null (as the metrics API sends them)."""
    yield "["
    separator = ""
    for record in records:
        yield separator + json.dumps({k: _finite_or_none(v) for k, v in record.items()}, allow_nan=False)
        separator = ",\n"
    yield "]\n"


def export_runs(query: runs.RunQuery, export_format: ExportFormat) -> Iterator[str]:
    """The run table as CSV or JSON: `query`'s runs with their tags, key params (and the filtered-on params) and
    summary figures."""
    extra = [condition.name for condition in query.filters.params] if query.filters else []
    columns = run_columns(extra)
    records = _run_records(query, columns)
    if export_format == "csv":
        return _as_csv(columns, ([record[c] for c in columns] for record in records))
    return _as_json(records)


def _metric_rows(run_id: int) -> Iterator[tuple[Any, ...]]:
    """Every stored point of the run, ordered by key then step (keyset pages on the primary key)."""
    after: tuple[str, int] | None = None
    while True:
        with session_scope() as session:
            page = metrics.points_page(session, run_id, after, METRICS_PAGE)
        yield from page
        if len(page) < METRICS_PAGE:
            return
        after = (page[-1][0], page[-1][1])


def export_metrics(run_id: int, export_format: ExportFormat) -> Iterator[str]:
    """A run's whole metric history (key, step, value, wall_time), never downsampled."""
    rows = _metric_rows(run_id)
    if export_format == "csv":
        return _as_csv(list(METRIC_COLUMNS), rows)
    return _as_json(dict(zip(METRIC_COLUMNS, row, strict=True)) for row in rows)

