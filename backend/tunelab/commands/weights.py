"""`tunelab runs download | export-merged`: a run's trained weights out of the server, as the run page's buttons give
them (the adapter or full model as a zip, a merged model made by a worker)."""

import time
from pathlib import Path
from typing import Any

from rich.progress import DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from tunelab.commands.common import CommandError, Context, ExitCode, usage_error

CHUNK_BYTES = 1024 * 1024
EXPORT_POLL_S = 1.0
EXPORT_ENDED = ("succeeded", "failed")


def download_weights(ctx: Context) -> None:
    """Stream one archive of the run (adapter, model or merged) into a zip file."""
    args, client = ctx.args, ctx.client
    archives = {archive["folder"]: archive for archive in client.get(f"/runs/{args.run_id}/artifacts")["archives"]}
    folder = args.folder or next((name for name in ("adapter", "model") if name in archives), None)
    if folder is None or folder not in archives:
        offered = ", ".join(archives) or "none yet"
        wanted = f"no {folder} archive" if folder else "no adapter or model archive"
        hint = "; `tunelab runs export-merged` makes the merged one" if folder == "merged" else ""
        raise CommandError(ExitCode.NOT_FOUND, "ARTIFACT_NOT_FOUND",
                           f"run {args.run_id} has {wanted} (it has: {offered}){hint}", {"folder": folder})
    target = Path(args.output or f"run-{args.run_id}-{folder}.zip")
    if target.exists() and not args.force:
        raise usage_error("--output", f"{target} exists; give another path or --force to replace it")
    partial = target.with_name(target.name + ".partial")
    written = 0
    with Progress(TextColumn(f"run {args.run_id} {folder}.zip"), DownloadColumn(), TransferSpeedColumn(),
                  console=ctx.err, disable=ctx.json or not ctx.err.is_terminal) as bar:
        task = bar.add_task("download", total=None)
        try:
            with client.stream("GET", archives[folder]["download_url"]) as response, \
                    partial.open("wb") as out:
                for chunk in response.iter_bytes(CHUNK_BYTES):
                    out.write(chunk)
                    written += len(chunk)
                    bar.update(task, completed=written)
        except BaseException:
            partial.unlink(missing_ok=True)  # never a half-written zip under the name asked for
            raise
    partial.replace(target)
    ctx.emit({"run_id": args.run_id, "folder": folder, "path": str(target), "size_bytes": written},
             lambda: ctx.out.print(f"run {args.run_id} {folder} written to {target} ({written:,} bytes)", markup=False))


def export_merged(ctx: Context) -> int:
    """Ask a worker to merge the run's adapter into its base, and wait for it unless --no-wait."""
    args, client = ctx.args, ctx.client
    export: dict[str, Any] = client.post(f"/runs/{args.run_id}/exports")
    shown = ""
    while not args.no_wait and export["status"] not in EXPORT_ENDED:
        if not ctx.json and export["status"] != shown:
            ctx.err.print(f"export {export['id']} of run {args.run_id} {export['status']}", markup=False)
            shown = export["status"]
        time.sleep(EXPORT_POLL_S)
        export = next(e for e in client.get(f"/runs/{args.run_id}/exports")["data"] if e["id"] == export["id"])

    def render() -> None:
        if export["status"] == "succeeded":
            ctx.out.print(f"run {args.run_id}: merged model ready; `tunelab runs download {args.run_id} --folder "
                          "merged` saves it", markup=False)
        elif export["status"] == "failed":
            ctx.out.print(f"run {args.run_id}: the export failed: {export.get('status_reason')}", markup=False)
        else:
            ctx.out.print(f"run {args.run_id}: export {export['id']} {export['status']}", markup=False)

    ctx.emit(export, render)
    return ExitCode.FAILED if export["status"] == "failed" else ExitCode.OK
