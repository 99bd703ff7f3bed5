"""`tunelab metrics export RUN_ID [--key K] [--csv] [-o FILE]`: every point at full resolution, streamed."""

import csv
import io
import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO

import httpx

from tunelab.commands.common import Context
from tunelab.core.csv_cells import text_cell

EXPORT_TIMEOUT = httpx.Timeout(30.0, read=300.0)


def export_metrics(ctx: Context) -> None:
    args = ctx.args
    export_format = "csv" if args.csv or not args.json else "json"
    keys = set(args.key or [])
    with ExitStack() as stack:
        out: IO[str] = stack.enter_context(Path(args.output).open("w", newline="")) if args.output else sys.stdout
        lines = _stream_lines(ctx, f"/runs/{args.run_id}/metrics/export", {"format": export_format})
        if export_format == "json":
            # The server's one JSON array; filtered by key it is parsed, else passed through as it streams.
            if keys:
                rows = [row for row in json.loads("".join(lines)) if row["key"] in keys]
                out.write(json.dumps(rows))
            else:
                for line in lines:
                    out.write(line)
            out.write("\n")
            return
        # The server's CSV holds a key as a spreadsheet-safe cell ('@key for @key): compare with the keys as cells.
        key_cells = {text_cell(key) for key in keys}
        written = 0
        for number, line in enumerate(lines):
            if number == 0 or not keys or _csv_key(line) in key_cells:
                out.write(line)
                written += number > 0
        if args.output:
            ctx.err.print(f"{written} points of run {args.run_id} written to {args.output}", markup=False)


def _csv_key(line: str) -> str:
    return next(csv.reader(io.StringIO(line)))[0]


def _stream_lines(ctx: Context, path: str, params: dict[str, str]) -> Iterator[str]:
    """The body's lines as they arrive, line endings kept (an export may be too big to hold)."""
    with ctx.client.stream("GET", path, params=params, timeout=EXPORT_TIMEOUT) as response:
        pending = ""
        for text in response.iter_text():
            pending += text
            *complete, pending = pending.split("\n")
            for line in complete:
                yield line + "\n"
        if pending:
            yield pending
