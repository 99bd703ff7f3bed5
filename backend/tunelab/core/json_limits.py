"""Bounds on the JSON documents the API takes: nesting, string length, items of one object or array, and the
characters no column can hold. json.loads recurses once per level, so a document a few thousand levels deep raised
RecursionError (a 500 on every JSON route, sign-in included); anything past these bounds is refused instead, with a
422 naming where."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tunelab.core.text import INVALID_CHAR, INVALID_CHAR_MESSAGE, may_hold_invalid_chars

MAX_DEPTH = 64  # run configs and params nest a few levels; nothing a route takes comes near
MAX_STRING_CHARS = 100_000  # the longest field a route takes is a 20,000-character playground prompt
MAX_ITEMS = 10_000  # keys of one object or items of one array: the largest list a route takes is a metrics batch


@dataclass(frozen=True)
class JsonProblem:
    """Where a document breaks a bound ("params.a.b", "body" for the whole), what is wrong and its error type."""

    field: str
    message: str
    type: str


TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


def json_problem(body: bytes) -> JsonProblem | None:
    """The first place in `body` past the bounds or holding an invalid character; None when there is none, or when the
    body is not JSON (the route's own validation words that). Most bodies are decided by a few byte counts (C loops,
    ~1 µs a kilobyte): only one that could break a bound is parsed and walked."""
    if not may_hold_invalid_chars(body) and not _may_break_bounds(body):
        return None
    try:
        document = json.loads(body)
    except RecursionError:  # deeper than the interpreter's recursion limit (~1,000), so far deeper than MAX_DEPTH
        return JsonProblem("body", TOO_DEEP, "json_too_deep")
    except ValueError:
        return None
    return next(_problems(document), None)


def _may_break_bounds(body: bytes) -> bool:
    # Each bound needs at least as many bytes of some kind: a level an opening bracket, an item past the first a
    # comma, a character a byte.
    return (len(body) > MAX_STRING_CHARS or body.count(b",") >= MAX_ITEMS
            or body.count(b"{") + body.count(b"[") > MAX_DEPTH)


def _string_problem(value: str, path: tuple[str, ...]) -> JsonProblem | None:
    if len(value) > MAX_STRING_CHARS:
        return JsonProblem(_field(path), f"longer than {MAX_STRING_CHARS:,} characters", "string_too_long")
    if INVALID_CHAR.search(value):
        return JsonProblem(_field(path), INVALID_CHAR_MESSAGE, "string_invalid_character")
    return None


def _field(path: tuple[str, ...]) -> str:
    return ".".join(path) or "body"


def _problems(document: Any) -> Iterator[JsonProblem]:
    """The problems in document order, walked with a stack of its own rather than by recursion."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if problem := _string_problem(value, path):
                yield problem
            continue
        if not isinstance(value, dict | list):
            continue
        if len(path) >= MAX_DEPTH:
            yield JsonProblem(_field(path), TOO_DEEP, "json_too_deep")
        elif len(value) > MAX_ITEMS:
            yield JsonProblem(_field(path), f"more than {MAX_ITEMS:,} items", "too_long")
        elif isinstance(value, dict):
            for key in value:
                # A key is named without its invalid characters, which the answer could not carry.
                if problem := _string_problem(key, (*path, INVALID_CHAR.sub("", key)[:200])):
                    yield problem
            stack.extend((item, (*path, key)) for key, item in reversed(value.items()))
        else:
            stack.extend((item, (*path, str(index))) for index, item in reversed(list(enumerate(value))))
