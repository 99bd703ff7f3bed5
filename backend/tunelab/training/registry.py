"""The only list of training methods and objectives. Light to import: the API reads it to publish JSON Schemas,
so nothing here (or in the method/objective modules at import time) touches torch, transformers, peft or trl."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tunelab.training.params import TrainingParams

if TYPE_CHECKING:
    from peft import PeftConfig

# A JSON object: a row of a dataset file, or a record a trainer takes.
Record = dict[str, Any]


@dataclass(frozen=True)
class MethodSpec:
    name: str
    title: str
    description: str
    params_model: type[TrainingParams]
    objectives: tuple[str, ...]
    peft: bool
    # (validated params, an instance of params_model; saved tokenizer dir) -> the PEFT config; None for methods that
    # train the weights directly.
    build_peft_config: "Callable[[Any, str], PeftConfig] | None" = None


@dataclass(frozen=True)
class ObjectiveSpec:
    name: str
    title: str
    description: str
    dataset_formats: tuple[str, ...]
    # Turns JSONL rows of one dataset format into the records the objective's trainer takes.
    convert_rows: Callable[[list[Record], str], list[Record]]


_methods: dict[str, MethodSpec] = {}
_objectives: dict[str, ObjectiveSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add a method; called once by its module at import."""
    if spec.name in _methods:
        raise ValueError(f"method {spec.name!r} is already registered")
    if spec.peft != (spec.build_peft_config is not None):
        raise ValueError(f"method {spec.name!r}: a PEFT method needs build_peft_config, and only it")
    _methods[spec.name] = spec
    return spec


def register_objective(spec: ObjectiveSpec) -> ObjectiveSpec:
    """Add an objective; called once by its module at import."""
    if spec.name in _objectives:
        raise ValueError(f"objective {spec.name!r} is already registered")
    _objectives[spec.name] = spec
    return spec


def list_methods() -> list[MethodSpec]:
    return list(_methods.values())


def get_method(name: str) -> MethodSpec:
    """The method called `name`; KeyError if none is."""
    try:
        return _methods[name]
    except KeyError:
        raise KeyError(f"unknown training method {name!r}; known: {', '.join(_methods)}") from None


def list_objectives() -> list[ObjectiveSpec]:
    return list(_objectives.values())


def get_objective(name: str) -> ObjectiveSpec:
    """The objective called `name`; KeyError if none is."""
    try:
        return _objectives[name]
    except KeyError:
        raise KeyError(f"unknown training objective {name!r}; known: {', '.join(_objectives)}") from None


def resolve_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Validate `params` against the method's model and return them with every default filled in."""
    return get_method(method).params_model.model_validate(params).model_dump(mode="json")


# Importing the packages runs every module's register_* call, so the lists above are complete once this module is.
from tunelab.training import methods as _methods_package  # noqa: E402, F401
from tunelab.training import objectives as _objectives_package  # noqa: E402, F401
