"""Characters that no column, log or JSON answer can hold, and where they hide in a parsed JSON document."""

import re
from collections.abc import Iterator
from typing import Any

# PostgreSQL refuses NUL in text, and a lone UTF-16 surrogate cannot be encoded to UTF-8. json.loads turns a valid
# surrogate pair into one character, so any surrogate left in a parsed string is a lone one.
INVALID_CHAR = re.compile("[\x00\ud800-\udfff]")
# The JSON escapes that can produce them: a cheap scan of the raw bytes decides whether a document needs a walk.
INVALID_JSON_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
INVALID_CHAR_MESSAGE = "must not contain NUL characters or unpaired UTF-16 surrogates"


def invalid_string_paths(value: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Dotted paths ("params.name", "points.0.key") of the strings, keys included, that hold an invalid character."""
    if isinstance(value, str):
        if INVALID_CHAR.search(value):
            yield ".".join(path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if INVALID_CHAR.search(key):
                yield ".".join((*path, INVALID_CHAR.sub("", key)))
            yield from invalid_string_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from invalid_string_paths(item, (*path, str(index)))
