"""The playground: one prompt to a base model and to tuned runs of it, completions generated on an inference worker
(queue `infer`) and streamed token by token.

A request lives in Redis only, for REQUEST_TTL_S: it is a moment's use of compute, not a record. The API checks
it (the runs succeeded with saved weights, on one base; the caller edits the project), writes what the worker needs
(`<ns>:playground:<id>:request`) and sends the id. The worker generates each completion in turn, appending every
token to a Redis Stream (`<ns>:playground:<id>`), so that a browser connecting after generation started still reads
every token from the start, and any API process can serve the stream. The API never loads a model.

The inference worker is shared compute, so each user gets a fair share of it. Admission: at most
`playground_max_in_flight` requests of a user waiting or generating and `playground_max_per_minute` admitted in any
60 s, counted in Redis by one script (atomic, on Redis' clock), so every API process enforces the same limits; over
either the request is refused with RATE_LIMITED (429, Retry-After). Order: the requests waiting for an inference queue
form one line, a sorted set, in which each user's next request is placed one round after that user's previous one
(and never before the round being served), ties kept in arrival order. A worker takes the lowest: one request per
waiting user per round, that is round-robin between users, so a newcomer waits for the rest of the round being
served and then at most one request of each other user, however long their backlogs. One ZPOPMIN takes the next
request atomically for any number of workers, and the Celery message stays as it was (one per request, its id only):
a message is a turn at the worker, spent on whichever request is next in the line, not necessarily its own; each
request still has exactly one turn.
"""

import contextlib
import dataclasses
import json
import logging
import secrets
import threading
from collections.abc import AsyncIterator
from functools import partial
from typing import Any, Protocol

from redis.exceptions import RedisError
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError, ErrorCode
from tunelab.core.redis import get_async_redis, get_redis
from tunelab.core.settings import Settings, get_settings
from tunelab.db.models import Role, Run, RunStatus
from tunelab.schemas.playground import CompletionSlot, DatasetRowPrompt, PlaygroundCreate, PlaygroundPublic
from tunelab.services.accounts import access
from tunelab.services.accounts.principal import Principal
from tunelab.services.catalog.datasets import dataset_file
from tunelab.services.catalog.models import worker_model_path
from tunelab.services.live.live_hub import sse
from tunelab.services.runs import artifacts, run_files
from tunelab.services.runs import runs as run_checks
from tunelab.training import registry
from tunelab.training.formats import DatasetFormat
from tunelab.training.generation import ModelSource
from tunelab.training.objectives.sft import instruction_prompt

log = logging.getLogger(__name__)

REQUEST_TTL_S = 3600
RATE_WINDOW_S = 60
# How soon to try again when all of a user's requests are still in flight: generating one takes seconds, and nothing
# says which ends first (a client that reads its streams may simply send when one of them ends).
IN_FLIGHT_RETRY_S = 5
KEEPALIVE_MS = 15_000
READ_BATCH = 200
USING = "using the playground"

Prompt = str | list[dict[str, str]]


class GenerationBroker(Protocol):
    """Where playground requests go; the worker package implements it for Celery on Redis."""

    def send_generation(self, request_id: str, queue: str) -> None:
        """Put one generate_completions message on `queue`; raises when the broker is unreachable."""
        ...


def _key(settings: Settings, request_id: str, part: str = "") -> str:
    return f"{settings.redis_namespace}:playground:{request_id}{part}"


def _user_key(settings: Settings, user_id: int, part: str) -> str:
    return f"{settings.redis_namespace}:playground:user:{user_id}:{part}"


def _line_key(settings: Settings, queue: str, part: str = "") -> str:
    return f"{settings.redis_namespace}:playground:line:{queue}{part}"


# KEYS: the request, the user's in-flight set (id -> expiry), the user's recent admissions (id -> time), the line
# (member "<arrival>:<id>" -> round), the line's state (round being served, arrival and turn counters, each user's
# last round). ARGV: request id, user id, stored request, TTL, window, max in flight, max per window.
# Returns {0, its member of the line} when admitted, {1, max} over the in-flight limit, {2, seconds until a slot} over
# the rate.
_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local ttl, window = tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return {1, tonumber(ARGV[6])} end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then
  local oldest = tonumber(redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')[2])
  return {2, math.max(1, math.ceil(oldest + window - now))}
end
redis.call('SET', KEYS[1], ARGV[3], 'EX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('EXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('EXPIRE', KEYS[3], window)
local user = 'user:' .. ARGV[2]
local round = math.max(tonumber(redis.call('HGET', KEYS[5], 'round') or 0),
                       tonumber(redis.call('HGET', KEYS[5], user) or 0)) + 1
redis.call('HSET', KEYS[5], user, round)
local member = string.format('%016d:%s', redis.call('HINCRBY', KEYS[5], 'arrivals', 1), ARGV[1])
redis.call('ZADD', KEYS[4], round, member)
redis.call('EXPIRE', KEYS[4], ttl)
redis.call('EXPIRE', KEYS[5], ttl)
return {0, member}
"""

# KEYS: the line, its state. Returns {request id, turn} of the request served next, or nil when the line is empty.
_TAKE = """
local next = redis.call('ZPOPMIN', KEYS[1])
if #next == 0 then return nil end
redis.call('HSET', KEYS[2], 'round', next[2])
local turn = redis.call('HINCRBY', KEYS[2], 'turns', 1)
return {string.sub(next[1], 18), turn}
"""

# KEYS: the request, the user's in-flight set, recent admissions, the line. ARGV: request id, its member of the line.
# Undoes an admission whose message could not be sent: the request neither waits nor counts against its user.
_WITHDRAW = """
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[2])
return 0
"""


def _admit(settings: Settings, user_id: int, request_id: str, stored: dict[str, Any]) -> str:
    """Store the request and place it in the line within the user's limits (its member of the line is returned), or
    refuse it with RATE_LIMITED, writing nothing."""
    keys = [_key(settings, request_id, ":request"), _user_key(settings, user_id, "in-flight"),
            _user_key(settings, user_id, "recent"), _line_key(settings, settings.infer_queue),
            _line_key(settings, settings.infer_queue, ":state")]
    limits = [settings.playground_max_in_flight, settings.playground_max_per_minute]
    refusal, value = get_redis().eval(_ADMIT, len(keys), *keys, request_id, user_id, json.dumps(stored),
                                      REQUEST_TTL_S, RATE_WINDOW_S, *limits)
    if refusal == 1:
        raise AppError("RATE_LIMITED", f"you have {value} playground requests waiting or generating, the most one user "
                       "may have; send this one when one of them has ended",
                       {"limit": "in_flight", "max": value, "retry_after_s": IN_FLIGHT_RETRY_S})
    if refusal == 2:
        raise AppError("RATE_LIMITED", f"you sent {settings.playground_max_per_minute} playground requests within the "
                       f"last minute, the most one user may; try again in {value} s",
                       {"limit": "per_minute", "max": settings.playground_max_per_minute, "retry_after_s": value})
    return str(value)


def _withdraw(settings: Settings, user_id: int, request_id: str, member: str) -> None:
    keys = [_key(settings, request_id, ":request"), _user_key(settings, user_id, "in-flight"),
            _user_key(settings, user_id, "recent"), _line_key(settings, settings.infer_queue)]
    get_redis().eval(_WITHDRAW, len(keys), *keys, request_id, member)


def _error(code: ErrorCode, message: str, **details: Any) -> AppError:
    return AppError(code, message, details)


def _runs(session: Session, principal: Principal, project_id: int, run_ids: list[int]) -> list[Run]:
    found = []
    for run_id in run_ids:
        run = access.run(session, principal, run_id, Role.editor, USING)
        if run.project_id != project_id:
            raise _error("RUN_NOT_FOUND", f"run_ids: run {run_id} is not in project {project_id}", field="run_ids",
                         run_id=run_id)
        found.append(run)
    return found


def _base_of(run: Run) -> str:
    """The base by the name the launch gave it: the worker that generates finds it among its own models."""
    return run.model


# Where a run's folder goes in a request the inference worker reads: "run:<id>/<folder>", resolved by that worker into
# its own copy (the store's folder, or one fetched into its cache), never a path of the API's host.
_RUN_FOLDER = "run:"


def _run_folder_ref(run_id: int, top: str) -> str:
    return f"{_RUN_FOLDER}{run_id}/{top}"


def _source(settings: Settings, run: Run) -> ModelSource:
    if run.status != RunStatus.succeeded:
        raise _error("RUN_NOT_SUCCEEDED", f"run_ids: run {run.id} ({run.name}) is {run.status.value}; the playground "
                     "takes succeeded runs", field="run_ids", run_id=run.id, status=run.status.value)
    if not run.external and not registry.get_objective(run.objective).generates:
        raise _error("VALIDATION_ERROR", f"run_ids: run {run.id} ({run.name}) is a {run.objective} model: it scores "
                     "text and does not generate; pick a run that generates", field="run_ids", run_id=run.id)
    start_from = tuple((weights["kind"], _run_folder_ref(weights["run_id"], weights["kind"]))
                       for weights in run.config.get("start_from", []))
    tokenizer = (_run_folder_ref(run.id, "tokenizer")
                 if artifacts.has_file(settings, run.id, "tokenizer/tokenizer_config.json") else None)
    if not run.external and artifacts.has_file(settings, run.id, "adapter/adapter_config.json"):
        return ModelSource(base=_base_of(run), adapter_dir=_run_folder_ref(run.id, "adapter"), tokenizer_dir=tokenizer,
                           start_from=start_from)
    if not run.external and artifacts.has_file(settings, run.id, "model/config.json"):
        return ModelSource(base=_base_of(run), model_dir=_run_folder_ref(run.id, "model"), tokenizer_dir=tokenizer)
    raise _error("RUN_HAS_NO_WEIGHTS", f"run_ids: run {run.id} ({run.name}) saved no adapter or model",
                 field="run_ids", run_id=run.id)


def _scorer(session: Session, settings: Settings, project_id: int, run_id: int) -> tuple[str, ModelSource]:
    """The reward run that scores the completions, checked as an online RL launch checks it, and what to load."""
    run = run_checks.reward_run_of(session, settings, run_id, "reward_run", project_id)
    weights = tuple((w["kind"], _run_folder_ref(w["run_id"], w["kind"])) for w in run_checks.start_from_of(run))
    return f"run {run.id}: {run.name}", ModelSource(base=_base_of(run), start_from=weights,
                                                    tokenizer_dir=_run_folder_ref(run.id, "tokenizer"))


def localized(settings: Settings, source: ModelSource) -> ModelSource:
    """A request's source as this worker loads it: run folders from the store, the base from its own models."""
    def folder(ref: str | None) -> str | None:
        if ref is None or not ref.startswith(_RUN_FOLDER):
            return ref
        run_id, _, top = ref.removeprefix(_RUN_FOLDER).partition("/")
        return str(run_files.run_folder(settings, int(run_id), top))

    return ModelSource(base=str(worker_model_path(settings, source.base, source.base)),
                       adapter_dir=folder(source.adapter_dir), model_dir=folder(source.model_dir),
                       tokenizer_dir=folder(source.tokenizer_dir),
                       start_from=tuple((kind, folder(path) or path) for kind, path in source.start_from))


def _refuse(field: str, message: str) -> AppError:
    return AppError("VALIDATION_ERROR", f"{field}: {message}", [{"field": field, "message": message}])


def _trains_on_chats(run: Run) -> bool:
    return (run.config.get("dataset") or {}).get("format") != DatasetFormat.text.value


def dataset_row_prompt(session: Session, settings: Settings, principal: Principal,
                       wanted: DatasetRowPrompt) -> tuple[Prompt, str]:
    """(prompt, expected answer) of one dataset row, split as the trainer splits it: an instruction's user turn, a
    chat up to its last answer, a preference pair's or a rated answer's prompt; a text's first half of words."""
    dataset = access.dataset(session, principal, wanted.dataset_id)
    with dataset_file(settings, dataset).open(encoding="utf-8") as lines:
        rows = (line for line in lines if line.strip())
        row = next((json.loads(line) for i, line in enumerate(rows) if i == wanted.row), None)
    if row is None:
        raise AppError("VALIDATION_ERROR", f"dataset_row.row: dataset {dataset.id} has {dataset.row_count} rows "
                       f"(0 to {dataset.row_count - 1})",
                       [{"field": "dataset_row.row", "message": f"at most {dataset.row_count - 1}"}])
    match DatasetFormat(dataset.format):
        case DatasetFormat.instruction:
            return [{"role": "user", "content": instruction_prompt(row["instruction"], row.get("input", ""))}], \
                row["output"]
        case DatasetFormat.chat:
            messages = row["messages"]
            last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages))
            expected = messages[last]["content"] if last < len(messages) else ""
            return [{"role": m["role"], "content": m["content"]} for m in messages[:last]], expected
        case DatasetFormat.preference:
            return [{"role": "user", "content": row["prompt"]}], row["chosen"]
        case DatasetFormat.feedback:  # a disliked completion is not the answer expected
            return [{"role": "user", "content": row["prompt"]}], row["completion"] if row["label"] else ""
        case DatasetFormat.prompt:  # online RL's prompts; the answer, when the row has one, is the one expected
            return [{"role": "user", "content": row["prompt"]}], "" if row.get("answer") is None else str(row["answer"])
        case _:
            words = row["text"].split(" ")
            half = max(1, len(words) // 2)
            return " ".join(words[:half]), " ".join(words[half:])


def create_request(session: Session, settings: Settings, principal: Principal, body: PlaygroundCreate,
                   broker: GenerationBroker) -> PlaygroundPublic:
    """Check and queue one playground request: a completion slot for the base (if asked) and each run, and one for the
    request's own completion; with a reward run, each completion is scored too."""
    access.project(session, principal, body.project_id, Role.editor, USING)
    if body.completion is not None and body.reward_run is None:
        raise _refuse("completion", "a completion of your own is scored by a reward model: give reward_run")
    if not body.run_ids and body.completion is None:
        raise _refuse("run_ids", "give the runs to prompt (or a completion and a reward_run to score it)")
    runs = _runs(session, principal, body.project_id, body.run_ids)
    scorer = _scorer(session, settings, body.project_id, body.reward_run) if body.reward_run is not None else None
    # Compared by what the launch resolved (a name may stand for other weights on another server); loaded by name.
    bases = {run.id: str(run.config.get("model_path") or run.model) for run in runs}
    if len(set(bases.values())) > 1:
        raise _error("BASE_MODELS_DIFFER", f"run_ids: runs {', '.join(str(i) for i in bases)} were trained on "
                     f"different base models ({', '.join(sorted({run.model for run in runs}))}); compare runs of one "
                     "base", field="run_ids", run_ids=list(bases), bases={str(k): v for k, v in bases.items()})
    sources = [_source(settings, run) for run in runs]
    prompt: Prompt
    expected: str | None
    if body.prompt is not None:
        prompt, expected = body.prompt, None
    else:
        assert body.dataset_row is not None  # the schema asks for one of the two
        prompt, expected = dataset_row_prompt(session, settings, principal, body.dataset_row)
    chat = any(_trains_on_chats(run) for run in runs)
    slots: list[tuple[CompletionSlot, ModelSource]] = []
    if body.include_base and runs:
        first = runs[0]
        slots.append((CompletionSlot(slot=0, kind="base", run_id=None, label=f"base: {first.model}",
                                     chat_template=chat), ModelSource(base=_base_of(first))))
    for run, source in zip(runs, sources, strict=True):
        slots.append((CompletionSlot(slot=len(slots), kind="run", run_id=run.id, label=f"run {run.id}: {run.name}",
                                     chat_template=_trains_on_chats(run)), source))
    given = None
    if body.completion is not None and scorer is not None:
        given = CompletionSlot(slot=len(slots), kind="given", run_id=None, label="your completion", chat_template=chat)
    request_id = secrets.token_hex(12)
    user_id = principal.signed_in_user.id
    stored = {
        "project_id": body.project_id,
        "user_id": user_id,
        "prompt": prompt,
        "sampling": body.sampling.model_dump(),
        "slots": [{**slot.model_dump(), "source": dataclasses.asdict(source)} for slot, source in slots]
        + ([{**given.model_dump(), "text": body.completion}] if given is not None else []),
        "scorer": dataclasses.asdict(scorer[1]) if scorer is not None else None,
    }
    try:
        member = _admit(settings, user_id, request_id, stored)
    except RedisError as exc:
        raise _queue_unavailable(request_id, exc) from None
    try:
        broker.send_generation(request_id, settings.infer_queue)
    except Exception as exc:  # noqa: BLE001  (the broker away: nothing may wait for a message never sent, say so now)
        with contextlib.suppress(RedisError):  # Redis away too: the request expires unserved, and its slot with it
            _withdraw(settings, user_id, request_id, member)
        raise _queue_unavailable(request_id, exc) from None
    return PlaygroundPublic(id=request_id, project_id=body.project_id, prompt=prompt, expected=expected,
                            slots=[slot for slot, _ in slots] + ([given] if given is not None else []),
                            scored_by=scorer[0] if scorer is not None else None, events_url=f"/api/v1/playground/{request_id}/events")


def _queue_unavailable(request_id: str, exc: Exception) -> AppError:
    log.warning("could not send playground request %s", request_id, exc_info=exc)
    return AppError("QUEUE_UNAVAILABLE", f"the inference queue is unreachable ({type(exc).__name__}); try again")


def request_project(settings: Settings, request_id: str) -> int:
    """The project a live request belongs to; PLAYGROUND_NOT_FOUND once it expired (or never was)."""
    stored = get_redis().get(_key(settings, request_id, ":request"))
    if stored is None:
        raise AppError("PLAYGROUND_NOT_FOUND", f"playground request {request_id} does not exist or expired",
                       {"request_id": request_id})
    return int(json.loads(stored)["project_id"])


def check_reader(session: Session, settings: Settings, principal: Principal, request_id: str) -> None:
    """Only editors of the request's project read its stream (it shows what the runs generate for any prompt)."""
    access.require_role(session, principal, request_project(settings, request_id), Role.editor, USING)


async def stream_events(settings: Settings, request_id: str, last_event_id: str | None) -> AsyncIterator[str]:
    """The request's events as Server-Sent Events from after `last_event_id` (from the start without one), then as
    the worker adds them, until `end`."""
    # The socket waits out a blocking read and then some; on a Unix socket redis-py would otherwise give up first.
    redis = get_async_redis(socket_timeout=KEEPALIVE_MS / 1000 + 10)
    key, after = _key(settings, request_id), last_event_id or "0-0"
    try:
        yield "retry: 1000\n\n"
        while True:
            answer = await redis.xread({key: after}, count=READ_BATCH, block=KEEPALIVE_MS)
            if not answer:
                if not await redis.exists(_key(settings, request_id, ":request")):
                    yield sse("end", {"reason": "expired"})
                    return
                yield ": keep-alive\n\n"
                continue
            out = []
            for entry_id, fields in answer[0][1]:
                after = entry_id
                event = fields["event"]
                out.append(f"id: {entry_id}\nevent: {event}\ndata: {fields['data']}\n\n")
                if event == "end":
                    yield "".join(out)
                    return
            yield "".join(out)
    finally:
        await redis.aclose()


class _Events:
    """Appends one request's events to its stream, which lives as long as the request."""

    def __init__(self, settings: Settings, request_id: str) -> None:
        self._redis = get_redis()
        self._key = _key(settings, request_id)

    def add(self, event: str, **data: Any) -> None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.xadd(self._key, {"event": event, "data": json.dumps(data, separators=(",", ":"))})
        pipe.expire(self._key, REQUEST_TTL_S)
        pipe.execute()


def _add_token(events: _Events, slot: int, text: str) -> None:
    events.add("token", slot=slot, text=text)


def warm_up_in_background() -> None:
    """In a fresh inference worker process: import the generation libraries on a thread of their own, so the first
    playground request finds them loaded (a request that comes sooner waits on the import, no longer)."""
    from tunelab.training.libraries import import_libraries

    threading.Thread(target=import_libraries, name="import generation libraries", daemon=True).start()


def _take_next(settings: Settings) -> tuple[str, int, dict[str, Any]] | None:
    """The next request of the line (its id, its turn, what the API stored), skipping requests that expired while
    they waited; None when the line is empty."""
    redis = get_redis()
    keys = [_line_key(settings, settings.infer_queue), _line_key(settings, settings.infer_queue, ":state")]
    while (taken := redis.eval(_TAKE, len(keys), *keys)) is not None:
        request_id, turn = taken
        stored = redis.get(_key(settings, request_id, ":request"))
        if stored is not None:
            return request_id, int(turn), json.loads(stored)
        log.info("playground request %s expired before its turn: dropped", request_id)
    return None


def execute_request(request_id: str) -> None:
    """On the inference worker, for the message of request `request_id`: serve the next request of the line (this
    one, or another user's whose turn it is), generating every slot's completion in turn and streaming each token.
    The line holds each request once, so a duplicate delivery serves nothing twice: it finds a later request, or
    none. A slot that fails says why and the next one still runs; the request stops counting as its user's in flight
    when it ends."""
    from tunelab.training.generation import Sampling, generate, render_prompt, warm_models

    settings = get_settings()
    taken = _take_next(settings)
    if taken is None:
        log.info("message of playground request %s: the line is empty (served on an earlier turn, or expired)",
                 request_id)
        return
    served_id, turn, request = taken
    sampling = Sampling(**request["sampling"])
    events = _Events(settings, served_id)
    try:
        for slot in request["slots"]:
            number = slot["slot"]
            try:
                if slot["kind"] == "given":
                    text = slot["text"]
                    events.add("done", slot=number, text=text, token_count=None, first_token_s=None, total_s=None)
                else:
                    loaded = warm_models.get(localized(settings, ModelSource(**slot["source"])))
                    events.add("started", slot=number, turn=turn)
                    prompt_text = render_prompt(loaded.tokenizer, request["prompt"], slot["chat_template"])
                    result = generate(loaded, prompt_text, sampling, partial(_add_token, events, number))
                    text = result.text
                    events.add("done", slot=number, text=text, token_count=result.token_count,
                               first_token_s=result.first_token_s, total_s=result.total_s)
            except Exception as exc:  # noqa: BLE001  (the user sees why this model gave nothing)
                log.exception("playground request %s, slot %s failed", served_id, number)
                events.add("failed", slot=number, message=f"{type(exc).__name__}: {exc}")
                continue
            if request.get("scorer") is not None:
                _score(events, request, number, text)
    finally:
        events.add("end")
        get_redis().zrem(_user_key(settings, request["user_id"], "in-flight"), served_id)


def _score(events: "_Events", request: dict[str, Any], number: int, text: str) -> None:
    """The reward run's score of one slot's completion, as an event of its own after the slot's `done`."""
    from tunelab.training.generation import score_completion, warm_scorers

    try:
        scorer = warm_scorers.get(localized(get_settings(), ModelSource(**request["scorer"])))
        events.add("score", slot=number, score=score_completion(scorer, request["prompt"], text))
    except Exception as exc:  # noqa: BLE001  (the completion stands; the user sees why it has no score)
        log.exception("playground scoring of slot %s failed", number)
        events.add("score_failed", slot=number, message=f"{type(exc).__name__}: {exc}")


def read_samples(settings: Settings, run: Run) -> list[dict[str, Any]]:
    """The run's stored sample completions (samples.jsonl): prompt, expected, base and tuned."""
    text = artifacts.read_run_text(settings, run.id, "samples.jsonl")
    samples = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [{"prompt": s["prompt"], "expected": s.get("expected", ""), "base": s.get("base_completion"),
             "tuned": s.get("completion", ""), "cut_short": bool(s.get("time_budget_exceeded"))} for s in samples]


# Written by training.rl_samples while an online RL run trains (named here so the API does not import the trainer).
RL_SAMPLES_FILE = "rl_samples.jsonl"


def read_rl_samples(settings: Settings, run: Run) -> list[dict[str, Any]]:
    """The completions an online RL run sampled with their rewards (rl_samples.jsonl), newest step first; readable
    while it trains (a line being written is left for the next read)."""
    rows = []
    for line in artifacts.read_run_text(settings, run.id, RL_SAMPLES_FILE).splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return sorted(rows, key=lambda row: -int(row.get("step", 0)))


PREDICTIONS_FILE = "predictions.jsonl"


def read_predictions(settings: Settings, run: Run, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """A page of the run's evaluation by generation (predictions.jsonl), and how many rows it holds in all."""
    lines = [line for line in artifacts.read_run_text(settings, run.id, PREDICTIONS_FILE).splitlines() if line.strip()]
    return [json.loads(line) for line in lines[offset:offset + limit]], len(lines)
