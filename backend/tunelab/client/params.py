"""An external run's config cut to what the server takes (its bounds: services/runs/external_runs.py), so that a training
script never fails at `init` on a long prompt template or a large nested config: what does not fit is shortened or
left out, with one warning naming it."""

import json
import logging
from typing import Any

log = logging.getLogger("tunelab.client")

MAX_PARAM_KEY_CHARS = 250
MAX_PARAM_VALUE_CHARS = 6_000
MAX_PARAM_DEPTH = 4
MAX_PARAMS = 500
MAX_PARAMS_CHARS = 64 * 1024


def _fits(value: Any, depth: int = 0) -> bool:
    """Containers at most MAX_PARAM_DEPTH deep and keys no longer than a param's name."""
    if isinstance(value, dict | list):
        if depth >= MAX_PARAM_DEPTH:
            return False
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return all(len(str(key)) <= MAX_PARAM_KEY_CHARS and _fits(item, depth + 1) for key, item in items)
    return True


def bounded_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` (already JSON values) within the server's bounds: a value too long or too deep becomes its JSON text
    cut to the limit, and a param past the count or the total size, or with too long a name, is left out."""
    kept: dict[str, Any] = {}
    shortened, left_out = [], []
    total = 2  # the braces
    for key, value in params.items():
        if len(kept) >= MAX_PARAMS or len(key) > MAX_PARAM_KEY_CHARS:
            left_out.append(key[:40])
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        if len(text) > MAX_PARAM_VALUE_CHARS or not _fits(value):
            value = text[:MAX_PARAM_VALUE_CHARS - 1] + "…" if len(text) > MAX_PARAM_VALUE_CHARS else text
            shortened.append(key)
        size = len(json.dumps({key: value}))  # its share of the whole object, and a little more (the braces)
        if total + size > MAX_PARAMS_CHARS:
            left_out.append(key[:40])
            continue
        kept[key] = value
        total += size
    if shortened or left_out:
        log.warning("tunelab: the run's config is larger than the server keeps; shortened to text: %s; left out: %s",
                    ", ".join(shortened) or "none", ", ".join(left_out) or "none")
    return kept
