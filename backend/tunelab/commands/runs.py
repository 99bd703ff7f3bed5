"""`tunelab runs list | show | launch | watch | logs | cancel | resume | clone`."""

import sys
import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from tunelab.client.http import ApiClient, NoAnswer
from tunelab.commands import launch_spec, lookup
from tunelab.commands.common import CommandError, Context, ExitCode, usage_error

FINISHED = ("succeeded", "failed", "canceled")
WATCH_EXIT = {"succeeded": ExitCode.OK, "failed": ExitCode.FAILED, "canceled": ExitCode.USAGE}
STATUS_STYLE = {"succeeded": "green", "failed": "red", "canceled": "yellow", "running": "cyan", "queued": "dim"}
# A stream cut by a restarting API is opened again; only this long without any answer means the server is gone.
RECONNECT_FOR_S = 30.0
LOG_POLL_S = 1.0


def _loss(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _status(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def _progress(run: dict[str, Any]) -> str:
    """Steps done, and what a running run's process is doing where the count alone says nothing (loading the model,
    evaluating, saving…)."""
    progress = run["progress"]
    total = progress.get("total_steps")
    steps = f"{progress['current_step']}/{total}" if total else str(progress["current_step"])
    phase = progress.get("phase")
    return f"{steps} {phase.replace('_', ' ')}" if phase and phase != "training" else steps


def list_runs(ctx: Context) -> None:
    args, client = ctx.args, ctx.client
    params: dict[str, Any] = {"limit": args.limit}
    if (project := lookup.project_id(client, args.project)) is not None:
        params["project_id"] = project
    if args.status:
        params["status"] = args.status
    if args.tag:
        params["tag"] = args.tag
    page = client.get("/runs", params=params)

    def render() -> None:
        table = Table(title=f"{len(page['data'])} of {page['count']} runs")
        for column in ("id", "name", "status", "method", "model", "steps", "train loss", "best eval loss", "queued"):
            table.add_column(column, justify="right" if column in ("id", "steps") or "loss" in column else "left")
        for run in page["data"]:
            table.add_row(str(run["id"]), escape(run["name"]), _status(run["status"]), run["method"], escape(run["model"]),
                          _progress(run), _loss(run.get("latest_train_loss")), _loss(run.get("best_eval_loss")),
                          run["queued_at"][:19].replace("T", " "))
        ctx.out.print(table)

    ctx.emit(page, render)


def show_run(ctx: Context) -> None:
    run = ctx.client.get(f"/runs/{ctx.args.run_id}")
    ctx.emit(run, lambda: _print_run(ctx, run))


def _print_run(ctx: Context, run: dict[str, Any]) -> None:
    table = Table(show_header=False, title=f"run {run['id']}: {escape(run['name'])}", title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    reason = f" ({escape(run['status_reason'])})" if run.get("status_reason") else ""
    rows = [("status", _status(run["status"]) + reason), ("method", f"{run['method']} / {run['objective']}"),
            ("model", escape(run["model"])), ("dataset", str(run.get("dataset_id"))), ("queue", run["queue"]),
            ("steps", _progress(run)), ("train loss", _loss(run.get("latest_train_loss"))),
            ("best eval loss", _loss(run.get("best_eval_loss"))), ("tags", escape(", ".join(run.get("tags", [])))),
            ("queued", run["queued_at"]), ("finished", run.get("finished_at") or "")]
    params = run.get("config", {}).get("params", {})
    rows += [(f"  {name}", escape(str(value))) for name, value in sorted(params.items())]
    for name, value in rows:
        table.add_row(name, value)
    ctx.out.print(table)


def launch_run(ctx: Context) -> None:
    args, client = ctx.args, ctx.client
    spec = launch_spec.read_file(Path(args.file)) if args.file else launch_spec.LaunchSpec()
    launch_spec.add_flags(spec, {"name": args.name, "project": args.project, "objective": args.objective,
                                 "method": args.method, "model": args.model, "base_run": args.base_run,
                                 "dataset": args.dataset, "queue": args.queue}, args.param or [])
    checked = launch_spec.check(spec, client.get("/methods"))
    _check_queue(client, checked.get("queue"), spec.origin.get("queue", "--queue"))
    project = lookup.project_id(client, checked.get("project"))
    body = {"objective": checked["objective"], "method": checked["method"],
            "dataset": lookup.dataset_id(client, checked["dataset"], project), "params": checked["params"],
            **{key: checked[key] for key in ("name", "queue", "model", "base_run") if checked.get(key) is not None},
            **({"project_id": project} if project is not None else {})}
    run = client.launch("/runs", body, args.idempotency_key)
    ctx.emit(run, lambda: ctx.out.print(f"run {run['id']} ({escape(run['name'])}) {_status(run['status'])} on queue "
                                        f"{run['queue']}: `tunelab runs watch {run['id']}`"))


def watch_run(ctx: Context) -> int:
    """Follow the run's events to its end; exit 0 succeeded, 1 failed, 2 canceled."""
    client, run_id = ctx.client, ctx.args.run_id
    run = client.get(f"/runs/{run_id}")
    # The last loss of each key, by step: the run's summary until the stream brings newer points.
    losses: dict[str, tuple[int, float | None]] = {
        key: (-1, run.get(field)) for key, field in (("train/loss", "latest_train_loss"), ("eval/loss", "final_eval_loss"))
        if run.get(field) is not None}
    last_id: str | int = run["metric_seq"]
    # Where no one watches a bar redraw (a CI log, a file), a plain line each time the progress changes instead.
    plain = not ctx.json and not ctx.err.is_terminal
    last_line = ""
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  TextColumn("{task.fields[losses]}"), console=ctx.err, disable=ctx.json or plain) as bar:
        task = bar.add_task(f"run {run_id}", total=run["progress"].get("total_steps"), losses="")

        def show() -> None:
            nonlocal last_line
            shown = _losses(losses)
            place = f" #{run['queue_position']}" if run["status"] == "queued" and run.get("queue_position") else ""
            bar.update(task, description=f"run {run_id} {run['status']}{place}", completed=run["progress"]["current_step"],
                       total=run["progress"].get("total_steps"), losses=shown)
            if plain:
                line = _progress_line(run_id, run, place, shown)
                if line != last_line:
                    ctx.err.print(line, highlight=False, markup=False)
                    last_line = line

        show()
        ended, unreachable_since = False, None
        while not ended:
            try:
                for event_id, event, data in client.stream_sse(f"/runs/{run_id}/events", last_event_id=last_id):
                    unreachable_since = None
                    if event == "metrics":
                        last_id = event_id or last_id
                        for point in data:
                            if point["key"].endswith("/loss") and point["step"] >= losses.get(point["key"], (-1,))[0]:
                                losses[point["key"]] = (point["step"], point["value"])
                    elif event == "status":
                        run = data
                    elif event == "revoked":
                        raise CommandError(ExitCode.AUTH, "SHARE_REVOKED", str(data))
                    show()
                    if event == "end":
                        ended = True
                        break
                if not ended:
                    # Closed without an end (the API restarting, or the run deleted: then this read is a 404).
                    run = client.get(f"/runs/{run_id}")
            except NoAnswer:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > RECONNECT_FOR_S:
                    raise
                time.sleep(1)
        if run["status"] not in FINISHED:
            run = client.get(f"/runs/{run_id}")
    if ctx.json:
        ctx.emit(run, lambda: None)
    else:
        reason = f": {escape(run['status_reason'])}" if run.get("status_reason") else ""
        shown = f"  ({_losses(losses)})" if losses else ""
        ctx.out.print(f"run {run_id} {_status(run['status'])}{reason}{shown}")
    return WATCH_EXIT.get(run["status"], ExitCode.FAILED)


def _progress_line(run_id: int, run: dict[str, Any], place: str, losses: str) -> str:
    """`run 12 running: step 2 of 60 (training), train/loss 2.31`: the watch's progress as one plain line."""
    progress = run["progress"]
    total = f" of {progress['total_steps']}" if progress.get("total_steps") else ""
    phase = f" ({progress['phase']})" if progress.get("phase") else ""
    step = f": step {progress['current_step']}{total}{phase}" if run["status"] != "queued" else ""
    return f"run {run_id} {run['status']}{place}{step}" + (f", {losses}" if losses else "")


def _losses(losses: dict[str, tuple[int, float | None]]) -> str:
    return "  ".join(f"{key} {_loss(value)}" for key, (_, value) in sorted(losses.items()))


def show_logs(ctx: Context) -> None:
    client, run_id = ctx.client, ctx.args.run_id
    chunk = client.get(f"/runs/{run_id}/logs", params={"tail_bytes": ctx.args.tail_bytes})
    text = [chunk["text"]]
    if not ctx.json:
        sys.stdout.write(chunk["text"])
        sys.stdout.flush()
    while ctx.args.follow:
        finished = client.get(f"/runs/{run_id}")["status"] in FINISHED
        chunk = client.get(f"/runs/{run_id}/logs", params={"offset": chunk["next_offset"]})
        if chunk["text"]:
            text.append(chunk["text"])
            if not ctx.json:
                sys.stdout.write(chunk["text"])
                sys.stdout.flush()
        elif finished:
            break  # the status was read before this empty read: nothing more will be written
        else:
            time.sleep(LOG_POLL_S)
    if ctx.json:
        ctx.emit({"run_id": run_id, "text": "".join(text), "next_offset": chunk["next_offset"]}, lambda: None)


def _check_queue(client: ApiClient, queue: object, where: str) -> None:
    """Refuse, before anything is posted, a queue the server does not declare (GET /queues): the server would refuse
    it too, and the error names the flag or the file's key."""
    if queue is None:
        return
    declared = client.get("/queues")["data"]
    if queue not in [q["name"] for q in declared]:
        listed = ", ".join(f"{q['name']}{' (default)' if q['default'] else ''}" for q in declared)
        raise usage_error(where, f"{queue!r} is not a training queue of this server; choose one of {listed}")


def cancel_run(ctx: Context) -> None:
    run = ctx.client.post(f"/runs/{ctx.args.run_id}/cancel", params={"force": "true"} if ctx.args.force else None)
    ctx.emit(run, lambda: ctx.out.print(f"run {run['id']} {_status(run['status'])}"
                                        + (" (stops at its next step)" if run["status"] not in FINISHED else "")))


def resume_run(ctx: Context) -> None:
    """Queue a canceled or failed run again, from its newest checkpoint (or from the start without one)."""
    run = ctx.client.post(f"/runs/{ctx.args.run_id}/resume")
    start = f" from step {run['checkpoint_step']}" if run.get("checkpoint_step") else " from the start"
    ctx.emit(run, lambda: ctx.out.print(f"run {run['id']} {_status(run['status'])}{start}"))


def clone_run(ctx: Context) -> None:
    args, client = ctx.args, ctx.client
    source = client.get(f"/runs/{args.run_id}")
    spec = launch_spec.LaunchSpec(values={"method": source["method"], "objective": source["objective"],
                                          "model": source["model"], "dataset": source.get("dataset_id") or 0})
    launch_spec.add_flags(spec, {}, args.param or [])
    params = launch_spec.check(spec, client.get("/methods"))["params"]
    _check_queue(client, args.queue or None, "--queue")
    body = {"params": params, **{key: value for key, value in (("name", args.name), ("queue", args.queue)) if value}}
    run = client.launch(f"/runs/{args.run_id}/clone", body, args.idempotency_key)
    ctx.emit(run, lambda: ctx.out.print(f"run {run['id']} ({escape(run['name'])}) cloned from {args.run_id}, "
                                        f"{_status(run['status'])}"))
