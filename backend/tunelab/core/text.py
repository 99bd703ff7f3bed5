"""Characters that no column, log or JSON answer can hold, and where they hide in a parsed JSON document."""

import json
import re
from collections.abc import Iterator
from typing import Any

# PostgreSQL refuses NUL in text, and a lone UTF-16 surrogate cannot be encoded to UTF-8. json.loads turns a valid
# surrogate pair into one character, so any surrogate left in a parsed string is a lone one.
INVALID_CHAR = re.compile("[\x00\ud800-\udfff]")
# The JSON escapes that can produce them: a cheap scan of the raw bytes decides whether a document needs a walk.
INVALID_JSON_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
INVALID_CHAR_MESSAGE = "must not contain NUL characters or unpaired UTF-16 surrogates"


def may_hold_invalid_chars(body: bytes) -> bool:
    """Whether a JSON body has an escape that can make an invalid character. No backslash, no escape: a memchr over
    the bytes (~40 µs for a 10,000-point metrics batch, 1 MB) decides for nearly every body; the escape pattern
    (~500 µs) runs only on bodies that have one."""
    return b"\\" in body and INVALID_JSON_ESCAPE.search(body) is not None


def invalid_json_field(body: bytes) -> str | None:
    """The first field of a JSON body holding an invalid character ("body" for the whole); None when there is none or
    the body is not JSON that json.loads can read (the route's own validation answers that)."""
    if not may_hold_invalid_chars(body):
        return None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return next((path or "body" for path in invalid_string_paths(document)), None)


def invalid_string_paths(value: Any) -> Iterator[str]:
    """Dotted paths ("params.name", "points.0.key") of the strings, keys included, that hold an invalid character, in
    document order; walked with a stack of its own, so no depth json.loads returns can exhaust the recursion limit."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if INVALID_CHAR.search(item):
                yield ".".join(path)
        elif isinstance(item, dict):
            for key in item:
                if INVALID_CHAR.search(key):
                    yield ".".join((*path, INVALID_CHAR.sub("", key)))
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (*path, str(index))) for index, child in reversed(list(enumerate(item))))
