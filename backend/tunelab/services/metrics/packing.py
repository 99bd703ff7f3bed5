"""A chunk's columns as bytes (little-endian arrays, one per column) and back; and PostgreSQL array literals, the
cheapest way to hand psycopg a batch's columns (Driver.insert_rows). Speed-only: see the package's note."""

import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from tunelab.services.metrics.records import Series

# Chunks are little-endian whatever the machine, so a database file or dump moves between machines as it is.
NATIVE_IS_LITTLE_ENDIAN = sys.byteorder == "little"


def pack(typecode: str, numbers: Iterable[float]) -> bytes:
    packed = array(typecode, numbers)
    if not NATIVE_IS_LITTLE_ENDIAN:
        packed.byteswap()
    return packed.tobytes()


def unpack(typecode: str, data: bytes) -> array:
    unpacked = array(typecode)
    unpacked.frombytes(data)
    if not NATIVE_IS_LITTLE_ENDIAN:
        unpacked.byteswap()
    return unpacked


def chunk_points(chunks: Iterable[Sequence[bytes]]) -> Series:
    """The points of one key's chunks, in step order. Chunks that come in order of their last step are already in
    step order unless their step ranges interleave (steps logged out of order), which costs a sort."""
    steps, values, wall_times = array("q"), array("d"), array("d")
    ordered = True
    for step_bytes, value_bytes, wall_time_bytes in chunks:
        start = len(steps)
        steps.frombytes(step_bytes)
        values.frombytes(value_bytes)
        wall_times.frombytes(wall_time_bytes)
        ordered = ordered and (start == 0 or steps[start - 1] < steps[start])
    if not NATIVE_IS_LITTLE_ENDIAN:
        for column in (steps, values, wall_times):
            column.byteswap()
    if ordered:
        return steps.tolist(), values.tolist(), wall_times.tolist()
    order = sorted(range(len(steps)), key=steps.__getitem__)
    return [steps[i] for i in order], [values[i] for i in order], [wall_times[i] for i in order]


def array_literal(values: Sequence[Any]) -> str:
    """A column's values as one PostgreSQL array literal, a parameter of Driver.insert_rows (psycopg)."""
    if isinstance(values[0], str):
        return _text_array(values)
    if isinstance(values[0], bytes):
        return _bytea_array(values)
    return _number_array(values)


def _bytea_array(blobs: Sequence[bytes]) -> str:
    """A PostgreSQL bytea[] literal of hex elements (backslash, x, the hex digits; the backslash escaped for the array
    literal): the hex that psycopg's list dumper sends too, dumped in ~0.9 µs instead of ~5.5 µs for a chunk."""
    return "{" + ",".join(['"\\\\x' + blob.hex() + '"' for blob in blobs]) + "}"


def _text_array(texts: Sequence[str]) -> str:
    """A PostgreSQL text[] literal; each distinct text is quoted once (a batch repeats a few keys)."""
    quoted: dict[str, str] = {}
    for text_ in texts:
        if text_ not in quoted:
            quoted[text_] = '"' + text_.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "{" + ",".join([quoted[text_] for text_ in texts]) + "}"


def _number_array(numbers: Sequence[float]) -> str:
    return "{" + ",".join(map(repr, numbers)) + "}"
