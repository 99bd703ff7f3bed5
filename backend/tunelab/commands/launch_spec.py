"""A run to launch, from flags or a YAML/JSON file, checked against the method schema (GET /methods) before anything
is posted: an error names the field (and the file it came from), and no run is created."""

import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tunelab.commands.common import usage_error

FILE_KEYS = ("name", "project", "objective", "method", "model", "base_run", "dataset", "queue", "params")
NULL_WORDS = ("null", "none", "")


@dataclass
class LaunchSpec:
    """What the user asked for; `origin` of each top-level key and param says where it came from, for errors."""

    values: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    # Params given as text on the command line: their type comes from the schema.
    flag_params: set[str] = field(default_factory=set)


def read_file(path: Path) -> LaunchSpec:
    """A run file: its top-level keys are FILE_KEYS, `params` a mapping."""
    try:
        text = path.read_text()
    except OSError as error:
        raise usage_error("--file", f"cannot read {path}: {error.strerror}") from None
    try:
        loaded = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise usage_error("--file", f"{path.name} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                          f"{error}") from None
    if not isinstance(loaded, dict):
        raise usage_error("--file", f"{path.name} must hold a mapping of {', '.join(FILE_KEYS)}")
    spec = LaunchSpec()
    for key, value in loaded.items():
        where = f"{path.name}: {key}"
        if key not in FILE_KEYS:
            raise usage_error(where, f"unknown key (expected one of {', '.join(FILE_KEYS)})")
        if key == "params":
            if not isinstance(value, dict):
                raise usage_error(where, "must be a mapping of parameter names to values")
            for name, param in value.items():
                spec.params[str(name)] = param
                spec.origin[f"params.{name}"] = f"{path.name}: params.{name}"
        else:
            spec.values[key] = value
            spec.origin[key] = where
    return spec


def add_flags(spec: LaunchSpec, flags: dict[str, Any], params: list[str]) -> None:
    """Flags win over the file."""
    for key, value in flags.items():
        if value is not None:
            spec.values[key] = value
            spec.origin[key] = f"--{key.replace('_', '-')}"
    for given in params:
        name, sep, text = given.partition("=")
        if not sep or not name.strip():
            raise usage_error("--param", f"{given!r} is not NAME=VALUE")
        name = name.strip()
        spec.params[name] = text
        spec.flag_params.add(name)
        spec.origin[f"params.{name}"] = f"--param {name}"


def check(spec: LaunchSpec, methods: dict[str, Any]) -> dict[str, Any]:
    """The checked spec: method and objective known and compatible, every param known to them and of its type
    (flag text converted by the schema). Raises a usage error naming the first bad field."""
    # A run that starts from another run takes that run's base model.
    required = ("method", "dataset") if spec.values.get("base_run") not in (None, "") else ("method", "model", "dataset")
    for key in required:
        if spec.values.get(key) in (None, ""):
            raise usage_error(spec.origin.get(key, f"--{key.replace('_', '-')}"), "required")
    by_method = {m["name"]: m for m in methods["methods"]}
    by_objective = {o["name"]: o for o in methods["objectives"]}
    method_name = str(spec.values["method"])
    objective_name = str(spec.values.get("objective") or next(o["name"] for o in methods["objectives"] if o["is_default"]))
    if method_name not in by_method:
        raise usage_error(spec.origin["method"], f"unknown method {method_name!r} (one of {', '.join(by_method)})")
    if objective_name not in by_objective:
        raise usage_error(spec.origin.get("objective", "--objective"),
                          f"unknown objective {objective_name!r} (one of {', '.join(by_objective)})")
    method, objective = by_method[method_name], by_objective[objective_name]
    if objective_name not in method["objectives"]:
        raise usage_error(spec.origin.get("objective", "--objective"),
                          f"{method_name} does not train {objective_name} (it trains {', '.join(method['objectives'])})")
    properties = {**method["params_schema"].get("properties", {}), **objective["params_schema"].get("properties", {})}
    params: dict[str, Any] = {}
    for name, value in spec.params.items():
        where = spec.origin[f"params.{name}"]
        schema = properties.get(name)
        if schema is None:
            close = [p for p in properties if name.endswith(f"_{p}")] + difflib.get_close_matches(name, properties)
            hint = f" (did you mean {', '.join(dict.fromkeys(close))}?)" if close else ""
            raise usage_error(where, f"{method_name}/{objective_name} has no parameter {name!r}{hint}")
        if name in spec.flag_params:
            value = from_text(schema, value)
        problem = problem_with(schema, value)
        if problem:
            raise usage_error(where, problem)
        params[name] = value
    return {**spec.values, "method": method_name, "objective": objective_name, "params": params}


def _alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return schema["anyOf"] if "anyOf" in schema else [schema]


def from_text(schema: dict[str, Any], text: str) -> Any:
    """A command-line value as the schema's type: `8` → 8 for an integer, `a,b` → a list for an array; text the
    schema cannot take is left as it is, for problem_with to name."""
    kinds = [alternative.get("type") for alternative in _alternatives(schema)]
    stripped = text.strip()
    if "null" in kinds and stripped.lower() in NULL_WORDS:
        return None
    if "boolean" in kinds and stripped.lower() in ("true", "false", "yes", "no", "1", "0"):
        return stripped.lower() in ("true", "yes", "1")
    if "integer" in kinds:
        try:
            return int(stripped)
        except ValueError:
            pass
    if "number" in kinds:
        try:
            return float(stripped)
        except ValueError:
            pass
    if "array" in kinds and (stripped.startswith("[") or "string" not in kinds):
        try:
            listed = json.loads(stripped)
        except ValueError:
            listed = [part.strip() for part in stripped.split(",") if part.strip()]
        return listed
    return text


def problem_with(schema: dict[str, Any], value: Any) -> str | None:
    """Why `value` does not fit the schema (the subset the method schemas use), or None."""
    problems = [_problem_with_one(alternative, value) for alternative in _alternatives(schema)]
    if any(problem is None for problem in problems):
        return None
    unique = dict.fromkeys(problem.removeprefix("must be ") for problem in problems if problem)
    return "must be " + " or ".join(unique) + f" (got {value!r})"


def _problem_with_one(schema: dict[str, Any], value: Any) -> str | None:
    kind = schema.get("type")
    if "enum" in schema:
        return None if value in schema["enum"] else f"must be one of {', '.join(map(str, schema['enum']))}"
    if kind == "null":
        return None if value is None else "must be null"
    if kind == "boolean":
        return None if isinstance(value, bool) else "must be true or false"
    if kind == "string":
        return None if isinstance(value, str) else "must be a string"
    if kind == "array":
        if not isinstance(value, list):
            return "must be a list"
        item_kind = schema.get("items", {}).get("type")
        if item_kind == "string" and not all(isinstance(item, str) for item in value):
            return "must be a list of strings"
        return None
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be {'an integer' if kind == 'integer' else 'a number'}"
        if kind == "integer" and not float(value).is_integer():
            return "must be an integer"
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        return _bound_problem(schema, value)
    return None


def _bound_problem(schema: dict[str, Any], value: float) -> str | None:
    if "minimum" in schema and value < schema["minimum"]:
        return f"must be ≥ {schema['minimum']}"
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return f"must be > {schema['exclusiveMinimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"must be ≤ {schema['maximum']}"
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        return f"must be < {schema['exclusiveMaximum']}"
    return None
