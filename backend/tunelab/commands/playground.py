"""`tunelab playground RUN… --prompt TEXT`: a prompt to trained runs, generated on the server's inference worker.

There is no request to poll: the request's Server-Sent Events are its only state, from its first token whenever one
connects, so the verb follows them at a terminal (printing tokens as they come) and away from one (printing the
completion once it is done) alike. A request waiting in line sends only keep-alives, so nothing but --timeout decides
how long that may take.
"""

import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
from rich.markup import escape

from tunelab.client.http import NoAnswer, TunelabError, parse_sse
from tunelab.commands import lookup
from tunelab.commands.common import CommandError, Context, ExitCode, usage_error
from tunelab.commands.runs import RECONNECT_FOR_S

# The stream sends a keep-alive every 15 s while a request waits: a shorter read timeout would cut it there.
STREAM_SILENCE_S = 20.0
SAMPLING_FLAGS = {"max_new_tokens": "--max-new-tokens", "temperature": "--temperature", "top_p": "--top-p",
                  "top_k": "--top-k", "seed": "--seed"}
SAMPLED_ONLY = ("temperature", "top_p", "top_k")
# Control characters but the line break and tab: a model's text must not move the cursor or recolour a terminal.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """The text as a terminal may show it: control characters spelled out (`\\x1b`)."""
    return CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def sampling_params(args: Any) -> dict[str, Any]:
    """The sampling values given as flags, and only those, so that the API's defaults and bounds apply."""
    sampling: dict[str, Any] = {field: getattr(args, field) for field in SAMPLING_FLAGS
                                if getattr(args, field) is not None}
    if not args.sample and (given := [SAMPLING_FLAGS[field] for field in SAMPLED_ONLY if field in sampling]):
        raise usage_error(given[0], "takes effect only when sampling; add --sample (without it generation is greedy)")
    if args.sample:
        sampling["do_sample"] = True
    if args.ignore_eos:
        sampling["ignore_eos"] = True
    return sampling


def request_body(args: Any, project_id: int, dataset_id: int | None = None) -> dict[str, Any]:
    """POST /playground's body from the flags."""
    body: dict[str, Any] = {"project_id": project_id, "run_ids": args.run_ids, "include_base": args.include_base,
                            "sampling": sampling_params(args)}
    if dataset_id is None:
        body["prompt"] = args.prompt
    else:
        body["dataset_row"] = {"dataset_id": dataset_id, "row": args.row}
    if args.reward_run is not None:
        body["reward_run"] = args.reward_run
    if args.completion is not None:
        body["completion"] = args.completion
    return body


def prompt_runs(ctx: Context) -> int:
    """Send the prompt and follow the request to its end; exit 0 when every completion was generated."""
    args, client = ctx.args, ctx.client
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    if (args.dataset is None) != (args.row is None):
        raise usage_error("--row" if args.row is None else "--dataset", "--dataset and --row go together")
    sampling_params(args)  # a flag refused before anything is asked of the server
    if args.completion is not None and args.reward_run is None:
        raise usage_error("--completion", "a completion of your own is scored by a reward model: add --reward-run")
    if not args.run_ids and args.completion is None:
        raise usage_error("RUN", "give the runs to prompt (or --completion and --reward-run to score a text)")
    project = int(client.get(f"/runs/{(args.run_ids or [args.reward_run])[0]}")["project_id"])
    dataset = None if args.dataset is None else lookup.dataset_id(client, args.dataset, project)
    try:
        request = client.post("/playground", json=request_body(args, project, dataset))
    except TunelabError as error:
        if error.code == "RATE_LIMITED" and isinstance(error.details, dict) and error.details.get("retry_after_s"):
            raise CommandError(ExitCode.FAILED, error.code, f"{error.message} (Retry-After: "
                               f"{error.details['retry_after_s']} s)", error.details) from None
        raise
    result = _follow(ctx, request, deadline)
    if ctx.json:
        ctx.emit(result, lambda: None)
        return ExitCode.OK if result["status"] == "succeeded" else ExitCode.FAILED
    if not ctx.out.is_terminal:
        _print_completions(result)
    if result["status"] == "expired":
        raise CommandError(ExitCode.FAILED, "PLAYGROUND_EXPIRED", f"playground request {result['id']} expired before "
                           "an inference worker served it (is `tunelab worker --queues infer` running?)",
                           {"request_id": result["id"]})
    if failed := [slot for slot in result["slots"] if slot["status"] != "succeeded"]:
        raise CommandError(ExitCode.FAILED, "GENERATION_FAILED", "; ".join(
            f"{slot['label']}: {slot.get('error') or 'no completion'}" for slot in failed), {"request_id": result["id"]})
    return ExitCode.OK


def _print_completions(result: dict[str, Any]) -> None:
    """Off a terminal: the completion alone, or each one under its model's label when there are several."""
    slots = [slot for slot in result["slots"] if slot["status"] == "succeeded"]
    for slot in slots:
        if len(result["slots"]) > 1:
            sys.stdout.write(f"== {slot['label']} ==\n")
        sys.stdout.write(slot["text"] + "\n")
    sys.stdout.flush()


def _follow(ctx: Context, request: dict[str, Any], deadline: float | None) -> dict[str, Any]:
    """The request with each slot's outcome (status, text, token_count, first_token_s, total_s or error), read from
    its events to `end`; tokens are printed as they come at a terminal. A stream cut short is opened again after the
    last event read."""
    live = not ctx.json and ctx.out.is_terminal
    slots = {slot["slot"]: {**slot, "status": "waiting", "text": ""} for slot in request["slots"]}
    result: dict[str, Any] = {**request, "status": "waiting", "slots": list(slots.values())}
    if live:
        ctx.err.print(f"request {request['id']}: waiting for the inference worker…", style="dim", markup=False,
                      highlight=False)
    connect_s, read_s = ctx.timeouts
    last_id: str | None = None
    unreachable_since: float | None = None
    while True:
        read_timeout = max(read_s, STREAM_SILENCE_S)
        if deadline is not None:
            read_timeout = min(read_timeout, _left(request, deadline, ctx))
        headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_id} if last_id else {})}
        try:
            with ctx.client.stream("GET", request["events_url"], headers=headers,
                                   timeout=httpx.Timeout(connect_s, read=read_timeout)) as response:
                for event_id, event, data in parse_sse(_lines_before(response.iter_lines(), request, deadline, ctx)):
                    unreachable_since = None
                    last_id = event_id or last_id
                    if event == "end":
                        expired = isinstance(data, dict) and data.get("reason") == "expired"
                        done = all(slot["status"] == "succeeded" for slot in slots.values())
                        result["status"] = "expired" if expired else "succeeded" if done else "failed"
                        return result
                    _apply(ctx, slots, event, data, live)
            time.sleep(min(1.0, _left(request, deadline, ctx)))  # closed before `end`: again, after its `retry:`
        except NoAnswer:
            left = _left(request, deadline, ctx)
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > RECONNECT_FOR_S:
                raise
            time.sleep(min(1.0, left))


def _apply(ctx: Context, slots: dict[int, dict[str, Any]], event: str, data: Any, live: bool) -> None:
    if not isinstance(data, dict) or data.get("slot") not in slots:
        return
    slot = slots[data["slot"]]
    if event == "started":
        slot["status"] = "generating"
        if live and len(slots) > 1:
            ctx.out.print(f"== {slot['label']} ==", style="bold", markup=False, highlight=False)
    elif event == "token":
        slot["text"] += data["text"]
        if live:
            sys.stdout.write(terminal_safe(data["text"]))
            sys.stdout.flush()
    elif event == "done":
        slot.update(status="succeeded", text=data["text"],
                    **{key: data.get(key) for key in ("token_count", "first_token_s", "total_s")})
        if live:
            sys.stdout.write("\n")
            sys.stdout.flush()
            count = data.get("token_count")
            if count is not None:  # None: a completion of your own, only scored
                ctx.err.print(f"{count} token{'' if count == 1 else 's'} in {data.get('total_s') or 0:.1f} s",
                              style="dim", markup=False, highlight=False)
    elif event == "score":
        slot["score"] = data.get("score")
        if live or not ctx.json:
            ctx.err.print(f"{slot['label']}: reward {data.get('score'):.4f}", style="dim", markup=False,
                          highlight=False)
    elif event == "score_failed":
        slot["score_error"] = data.get("message")
        if not ctx.json:
            ctx.err.print(f"{slot['label']}: not scored: {data.get('message')}", markup=False, highlight=False)
    elif event == "failed":
        slot.update(status="failed", error=data.get("message"))
        if live:
            ctx.err.print(f"[red]failed[/red] {escape(slot['label'])}: {escape(str(data.get('message')))}",
                          highlight=False)


def _left(request: dict[str, Any], deadline: float | None, ctx: Context) -> float:
    """Seconds left before --timeout; the command's error once there are none."""
    if deadline is None:
        return float("inf")
    left = deadline - time.monotonic()
    if left <= 0:
        raise CommandError(ExitCode.TIMEOUT, "PLAYGROUND_TIMEOUT", f"playground request {request['id']} was not done "
                           f"within --timeout {ctx.args.timeout:g} s; it goes on on the server (its events last an "
                           f"hour: GET {request['events_url']})",
                           {"request_id": request["id"], "timeout_s": ctx.args.timeout})
    return left


def _lines_before(lines: Iterator[str], request: dict[str, Any], deadline: float | None,
                  ctx: Context) -> Iterator[str]:
    """The stream's lines, keep-alives included, until --timeout passes."""
    for line in lines:
        _left(request, deadline, ctx)
        yield line
