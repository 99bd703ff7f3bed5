"""The run table's filters: by tag, by a parameter of the resolved config, by a summary metric.

Parsed from the query strings people type (`r:16`, `learning_rate>0.0001`, `eval/loss<2`, `min(eval/loss)<2`)
into conditions, and turned into SQL that reads the run row, its tags and its metric summary, never the metric
history. The same SQL runs on SQLite and PostgreSQL: only reading a value out of the JSON config differs.
"""

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from sqlalchemy import ColumnElement, Select, and_, case, exists, func, literal, select
from sqlalchemy.orm import InstrumentedAttribute

from tunelab.core.errors import AppError
from tunelab.db.models import MetricSummary, Run, RunTag

Operator = Literal["<", "<=", ">", ">=", "="]
Aggregate = Literal["last", "min", "max"]

MAX_TAG_LENGTH = 50
MAX_TAGS_PER_RUN = 20

# The run's own summary figures, filterable by these names beside any logged metric key.
RUN_SUMMARY_COLUMNS: dict[str, InstrumentedAttribute] = {
    "best_eval_loss": Run.best_eval_loss,
    "final_eval_loss": Run.final_eval_loss,
    "tokens_per_second": Run.tokens_per_second,
    "wall_time_s": Run.wall_time_s,
    "peak_memory_bytes": Run.peak_memory_bytes,
    "trainable_params": Run.trainable_params,
}
_AGGREGATE_COLUMNS = {"last": MetricSummary.last_value, "min": MetricSummary.min_value, "max": MetricSummary.max_value}

_OPERATOR = r"(<=|>=|<|>|=)"
_PARAM_PATTERN = re.compile(rf"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(:|{_OPERATOR[1:-1]})\s*(.*?)\s*$")
_METRIC_PATTERN = re.compile(
    rf"^\s*(?:(min|max|last)\(\s*([A-Za-z0-9_./\-]+)\s*\)|([A-Za-z0-9_./\-]+))\s*{_OPERATOR}\s*(.*?)\s*$")


@dataclass(frozen=True)
class ParamCondition:
    name: str
    operator: Operator
    value: float | bool | str


@dataclass(frozen=True)
class MetricCondition:
    key: str
    aggregate: Aggregate
    operator: Operator
    value: float


@dataclass(frozen=True)
class RunFilters:
    """Runs having every tag, and meeting every param and metric condition."""

    tags: tuple[str, ...] = ()
    params: tuple[ParamCondition, ...] = ()
    metrics: tuple[MetricCondition, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tags or self.params or self.metrics)


def _invalid(parameter: str, text: str, why: str) -> AppError:
    message = f"{parameter}: {text!r} {why}"
    return AppError("VALIDATION_ERROR", message, [{"field": parameter, "message": why, "value": text}])


def tag_problem(tag: str) -> str | None:
    """Why `tag` is not a tag (None when it is one): 1–50 characters, no commas (lists of tags are comma-joined)."""
    if not tag.strip():
        return "a tag cannot be empty"
    if len(tag) > MAX_TAG_LENGTH:
        return f"a tag has at most {MAX_TAG_LENGTH} characters"
    if "," in tag:
        return "a tag cannot contain a comma"
    return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_param(text: str) -> ParamCondition:
    """`name:value` or `name=value` (equal), `name<value` … (a number). A value is a number, true/false, or text."""
    match = _PARAM_PATTERN.match(text)
    if match is None or not match.group(3):
        raise _invalid("param", text, "is not a filter like r:16 or learning_rate>0.0001")
    name, operator, raw = match.group(1), match.group(2), match.group(3)
    number = _number(raw)
    if operator == ":":
        operator = "="
    if operator != "=":
        if number is None:
            raise _invalid("param", text, f"compares with {operator}, which needs a number")
        return ParamCondition(name, operator, number)  # type: ignore[arg-type]
    if number is not None:
        return ParamCondition(name, "=", number)
    if raw.lower() in ("true", "false"):
        return ParamCondition(name, "=", raw.lower() == "true")
    return ParamCondition(name, "=", raw)


def parse_metric(text: str) -> MetricCondition:
    """`key<2` (the key's latest value), `min(key)<2`, `max(key)>=0.5`; operators < <= > >= =."""
    match = _METRIC_PATTERN.match(text)
    if match is None:
        raise _invalid("metric", text, "is not a filter like eval/loss<2 or min(eval/loss)<=1.5")
    aggregate, wrapped, bare, operator, raw = match.groups()
    value = _number(raw)
    if value is None:
        raise _invalid("metric", text, "needs a number after the operator")
    key = wrapped or bare
    if aggregate and key in RUN_SUMMARY_COLUMNS:
        raise _invalid("metric", text, f"{key} is one figure per run; compare it without {aggregate}()")
    return MetricCondition(key, cast(Aggregate, aggregate or "last"), cast(Operator, operator), value)


def parse_filters(tags: list[str] | None, params: list[str] | None, metrics: list[str] | None) -> RunFilters:
    for tag in tags or ():
        problem = tag_problem(tag)
        if problem:
            raise _invalid("tag", tag, problem)
    return RunFilters(tags=tuple(dict.fromkeys(t.strip() for t in tags or ())),
                      params=tuple(parse_param(p) for p in params or ()),
                      metrics=tuple(parse_metric(m) for m in metrics or ()))


def _compare(left: ColumnElement[Any] | InstrumentedAttribute[Any], operator: Operator,
             right: object) -> ColumnElement[bool]:
    match operator:
        case "<":
            return left < right
        case "<=":
            return left <= right
        case ">":
            return left > right
        case ">=":
            return left >= right
        case "=":
            return left == right


def _param_clause(condition: ParamCondition, dialect: str) -> ColumnElement[bool]:
    """The condition on config.params.<name>, true only where the stored value has the condition's JSON type (a
    text value never compares with a number, so no cast can fail)."""
    value = condition.value
    if dialect == "postgresql":
        element = Run.config[("params", condition.name)]
        json_type = func.json_typeof(element)
        text_value = element.as_string()
        if isinstance(value, bool):
            return and_(json_type == "boolean", text_value == ("true" if value else "false"))
        if isinstance(value, str):
            return and_(json_type == "string", text_value == value)
        number = case((json_type == "number", element.as_float()))
    else:
        path = f'$.params."{condition.name}"'
        json_type = func.json_type(Run.config, path)
        extracted = func.json_extract(Run.config, path)
        if isinstance(value, bool):
            return json_type == ("true" if value else "false")
        if isinstance(value, str):
            return and_(json_type == "text", extracted == value)
        number = case((json_type.in_(("integer", "real")), extracted))
    return _compare(number, condition.operator, literal(value))


def _metric_clause(condition: MetricCondition) -> ColumnElement[bool]:
    column = RUN_SUMMARY_COLUMNS.get(condition.key)
    if column is not None:
        return _compare(column, condition.operator, condition.value)
    summary = _AGGREGATE_COLUMNS[condition.aggregate]
    return exists().where(MetricSummary.run_id == Run.id, MetricSummary.key == condition.key,
                          _compare(summary, condition.operator, condition.value))


def apply(stmt: Select, filters: RunFilters | None, dialect: str) -> Select:
    """`stmt` (over Run) narrowed to the runs that pass `filters`."""
    if not filters:
        return stmt
    if filters.tags:
        tagged = (select(RunTag.run_id).where(RunTag.tag.in_(filters.tags)).group_by(RunTag.run_id)
                  .having(func.count(RunTag.tag) == len(filters.tags)))
        stmt = stmt.where(Run.id.in_(tagged))
    for param in filters.params:
        stmt = stmt.where(_param_clause(param, dialect))
    for metric in filters.metrics:
        stmt = stmt.where(_metric_clause(metric))
    return stmt
