"""The parameter reference of docs/parameters.md, rendered from the registry: every objective and method, and every
parameter with its meaning, default and bounds, as GET /methods publishes them. Generated, so that it cannot drift
from the code: `make docs` rewrites the file and tests/unit/test_parameter_reference.py fails when it is stale.

    python -m tunelab.training.reference [--write docs/parameters.md]
"""

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tunelab.training import registry
from tunelab.training.params import TrainingParams

HEADER = """# Parameters of every objective and method

<!-- Generated from the training registry by `make docs` (python -m tunelab.training.reference --write
docs/parameters.md); tests/unit/test_parameter_reference.py fails when this file is stale. Do not edit by hand. -->

A run's `params` are the shared training parameters, the method's own and the objective's own, in one object (the
launch form, `POST /runs`, `tunelab runs launch --params` and studies all take it). Every default below is filled in
when it is left out; a value out of its bounds is refused with a 422 naming the parameter. The same schema is served
by `GET /api/v1/methods`, which the launch form is built from. A model can bring its own defaults (the bundled tiny
model trains with a higher learning rate, for instance): those replace the defaults below, and the launch form shows
them.
"""


def render() -> str:
    """The whole reference, as Markdown."""
    objectives, methods = registry.list_objectives(), registry.list_methods()
    parts = [HEADER, "## Objectives\n", _table(
        ["objective", "what it trains", "dataset formats", "methods"],
        [[f"`{o.name}`", f"**{o.title}.** {o.description}", ", ".join(f"`{f}`" for f in o.dataset_formats),
          ", ".join(f"`{m.name}`" for m in registry.methods_for(o.name))] for o in objectives])]
    parts += ["## Methods\n", _table(
        ["method", "what it trains", "adapter (PEFT)", "needs a GPU"],
        [[f"`{m.name}`", f"**{m.title}.** {m.description}", _yes_no(m.peft), _yes_no(m.requires_cuda)]
         for m in methods])]
    shared = set(TrainingParams.model_fields)
    parts += ["## Shared training parameters\n",
              "Every method takes these (optimisation, precision, data split, evaluation, checkpoints).\n",
              _params_table(TrainingParams, TrainingParams.model_fields)]
    for method in methods:
        own = [name for name in method.params_model.model_fields if name not in shared]
        parts.append(f"## Method `{method.name}`: {method.title}\n")
        parts.append(_params_table(method.params_model, own) if own else "No parameters of its own.\n")
        changed = _changed_defaults(method.params_model)
        if changed:
            parts.append("Shared parameters with another default for this method: "
                         + ", ".join(f"`{name}` = {_value(value)}" for name, value in changed.items()) + ".\n")
    for objective in objectives:
        parts.append(f"## Objective `{objective.name}`: {objective.title}\n")
        own_fields = objective.params_model.model_fields
        parts.append(_params_table(objective.params_model, list(own_fields)) if own_fields
                     else "No parameters of its own.\n")
        if objective.learning_rate_scale != 1.0:
            parts.append(f"Its learning rate is SFT's × {objective.learning_rate_scale:g} for the same method: "
                         + ", ".join(f"`{m.name}` {_value(lr)}" for m, lr in _scaled_learning_rates(objective))
                         + ".\n")
        if objective.metric_keys:
            parts.append("Metrics it adds: " + ", ".join(f"`train/{k}`, `eval/{k}`" for k in objective.metric_keys)
                         + ".\n")
    return "\n".join(parts)


def _scaled_learning_rates(objective: registry.ObjectiveSpec) -> list[tuple[registry.MethodSpec, float]]:
    return [(method, registry.params_model(objective.name, method.name).model_fields["learning_rate"].default)
            for method in registry.methods_for(objective.name)]


def _changed_defaults(model: type[TrainingParams]) -> dict[str, Any]:
    """Shared parameters whose default the method changes (prompt learning's higher learning rate …)."""
    base = TrainingParams().model_dump(mode="json")
    own = model().model_dump(mode="json")
    return {name: own[name] for name in base if own[name] != base[name]}


def _params_table(model: type[BaseModel], names: Any) -> str:
    schema = model.model_json_schema()
    properties = schema.get("properties", {})
    rows = []
    for name in names:
        field = properties[name]
        meaning = ". ".join(part for part in (field.get("title"), field.get("description")) if part)
        rows.append([f"`{name}`", _type(field, schema), _value(field.get("default")), _bounds(field), meaning])
    return _table(["parameter", "type", "default", "bounds", "meaning"], rows)


def _type(field: dict[str, Any], schema: dict[str, Any]) -> str:
    options = field.get("anyOf")
    if options:
        kinds = [_type(option, schema) for option in options]
        return " or ".join(kind for kind in kinds if kind != "null") + (" or null" if "null" in kinds else "")
    if "$ref" in field:
        return _type(schema["$defs"][field["$ref"].rsplit("/", 1)[1]], schema)
    if "enum" in field:
        return "one of " + ", ".join(f"`{value}`" for value in field["enum"])
    if "const" in field:
        return f"`{field['const']}`"
    if field.get("type") == "array":
        return f"list of {_type(field.get('items', {}), schema)}"
    return {"integer": "int", "number": "float", "boolean": "bool", "string": "str"}.get(field.get("type", ""),
                                                                                       field.get("type", "any"))


def _bounds(field: dict[str, Any]) -> str:
    bounds = []
    for option in field.get("anyOf", [field]):
        for key, symbol in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"),
                            ("minLength", "length ≥"), ("maxLength", "length ≤"), ("minItems", "items ≥"),
                            ("maxItems", "items ≤")):
            if key in option:
                bounds.append(f"{symbol} {_number(option[key])}")
    return ", ".join(bounds) or "—"


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{_number(value)}`"
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Render the parameter reference from the training registry.")
    parser.add_argument("--write", type=Path, help="write it to this file instead of printing it")
    args = parser.parse_args()
    text = render()
    if args.write is None:
        print(text, end="")
    else:
        args.write.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
