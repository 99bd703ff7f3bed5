"""The JSON bounds (core/json_limits): each is refused naming where, nothing within them is, and no depth raises."""

import json

import pytest

from tunelab.core.json_limits import MAX_DEPTH, MAX_ITEMS, MAX_STRING_CHARS, json_problem


def _problem(document: object) -> tuple[str, str] | None:
    problem = json_problem(json.dumps(document).encode())
    return None if problem is None else (problem.field, problem.type)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_a_document_at_every_bound_is_taken():
    assert _problem({"a": _nested(MAX_DEPTH - 1), "s": "x" * MAX_STRING_CHARS, "l": [0] * MAX_ITEMS}) is None


@pytest.mark.parametrize(("document", "expected"), [
    ({"a": _nested(MAX_DEPTH)}, ("a" + ".0" * (MAX_DEPTH - 1), "json_too_deep")),
    ({"p": {"s": "x" * (MAX_STRING_CHARS + 1)}}, ("p.s", "string_too_long")),
    ({"p": {"k" * (MAX_STRING_CHARS + 1): 1}}, ("p." + "k" * 200, "string_too_long")),
    ({"l": [0] * (MAX_ITEMS + 1)}, ("l", "too_long")),
    ({"o": {str(i): 0 for i in range(MAX_ITEMS + 1)}}, ("o", "too_long")),
    ({"a": [{"b": "ok"}, {"b": "nul \u0000"}]}, ("a.1.b", "string_invalid_character")),
])
def test_past_a_bound_is_named_where(document, expected):
    assert _problem(document) == expected


def test_nesting_deeper_than_the_parser_can_recurse_is_too_deep_not_an_error():
    body = b'{"a": ' + b"[" * 100_000 + b'"\\u0000"' + b"]" * 100_000 + b"}"
    problem = json_problem(body)
    assert problem is not None and (problem.field, problem.type) == ("body", "json_too_deep")


def test_a_body_that_is_not_json_is_left_to_the_route():
    assert json_problem(b"[" * 100 + b"not json") is None
