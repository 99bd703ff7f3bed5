"""`tunelab datasets upload FILE --name N [--format F]`, `tunelab datasets list`."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table

from tunelab.commands import lookup
from tunelab.commands.common import Context, usage_error

CHUNK_BYTES = 256 * 1024
# The server validates (and tokenizes) the whole file before it answers: a big one takes a while.
UPLOAD_TIMEOUT = httpx.Timeout(30.0, read=600.0)


def upload_dataset(ctx: Context) -> None:
    args, client = ctx.args, ctx.client
    path = Path(args.file)
    if not path.is_file():
        raise usage_error("FILE", f"{path} is not a file")
    fields = {"name": args.name, "format": args.format,
              "project_id": lookup.project_id(client, args.project)}
    boundary = uuid.uuid4().hex
    head = b"".join(_field(boundary, name, str(value)) for name, value in fields.items() if value is not None)
    head += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{_quoted(path.name)}\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    size = path.stat().st_size
    with Progress(TextColumn(f"[bold]uploading {path.name}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  console=ctx.err, disable=ctx.json, transient=True) as bar:
        task = bar.add_task("upload", total=size)

        def body() -> Iterator[bytes]:
            yield head
            with path.open("rb") as handle:
                while chunk := handle.read(CHUNK_BYTES):
                    bar.advance(task, len(chunk))
                    yield chunk
            yield tail

        dataset = client.post("/datasets", content=body(), headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(len(head) + size + len(tail))}, timeout=UPLOAD_TIMEOUT)
    ctx.emit(dataset, lambda: ctx.out.print(
        f"dataset {dataset['id']} {dataset['name']!r}: {dataset['format']}, {dataset.get('row_count', '?')} rows", markup=False))


def _quoted(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


def _field(boundary: str, name: str, value: str) -> bytes:
    return f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n".encode()


def list_datasets(ctx: Context) -> None:
    """The datasets a launch can name: the project's (or every project of yours) and the bundled samples."""
    args, client = ctx.args, ctx.client
    params: dict[str, object] = {"limit": args.limit}
    if (project := lookup.project_id(client, args.project)) is not None:
        params["project_id"] = project
    page = client.get("/datasets", params=params)

    def render() -> None:
        table = Table(title=f"{len(page['data'])} of {page['count']} datasets")
        for column in ("id", "name", "format", "rows", "size", "project", "created"):
            table.add_column(column, justify="right" if column in ("id", "rows", "size") else "left")
        for dataset in page["data"]:
            table.add_row(str(dataset["id"]), escape(dataset["name"]), dataset["format"], f"{dataset['row_count']:,}",
                          f"{dataset['size_bytes']:,} B", "bundled" if dataset["bundled"] else str(dataset["project_id"]),
                          dataset["created_at"][:19].replace("T", " "))
        ctx.out.print(table)

    ctx.emit(page, render)
