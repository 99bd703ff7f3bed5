from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Query, status
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator

from tunelab.api.deps import GenerationBrokerDep, SessionDep, SettingsDep
from tunelab.api.policies import RunReader, UserDep
from tunelab.core.errors import responses
from tunelab.schemas.playground import (
    PlaygroundCreate,
    PlaygroundPublic,
    RlSamplePublic,
    RlSamplesPublic,
    RunPredictionPublic,
    RunPredictionsPublic,
    RunSamplePublic,
    RunSamplesPublic,
)
from tunelab.services.evaluation import playground

router = APIRouter(tags=["playground"])

RequestId = Annotated[str, Path(pattern=r"^[0-9a-f]{24}$", description="A playground request's id")]
# A Redis stream entry id is two unsigned 64-bit numbers: 20 digits also spell more, which XREAD refuses mid-stream.
MAX_STREAM_ID_PART = 2**64 - 1


def _stream_entry_id(value: str | None) -> str | None:
    if value is not None and any(int(part) > MAX_STREAM_ID_PART for part in value.split("-")):
        raise ValueError(f"each part of an event id is at most {MAX_STREAM_ID_PART}")
    return value


StreamEntryId = Annotated[str | None, AfterValidator(_stream_entry_id)]


@router.post("/playground", response_model=PlaygroundPublic, status_code=status.HTTP_202_ACCEPTED,
             responses=responses(401, 403, 404, 409, 422, 429, 503))
def create_playground_request(body: PlaygroundCreate, session: SessionDep, settings: SettingsDep,
                              broker: GenerationBrokerDep, principal: UserDep) -> PlaygroundPublic:
    """One prompt (or a dataset row) to the runs' base model and each run, generated on an inference worker (queue
    `infer`) with the chat template each run trained with. Editors of the project only. 409 when a run has not
    succeeded or saved no weights, 422 when the runs have different base models; both name the run ids. 429
    (RATE_LIMITED, with Retry-After) past the caller's share: `playground_max_in_flight` requests waiting or
    generating, `playground_max_per_minute` sent within a minute. Waiting requests are served round-robin between
    users. Read the completions, token by token, from `events_url`."""
    return playground.create_request(session, settings, principal, body, broker)


def _stream_reader_resume(
    request_id: RequestId, session: SessionDep, settings: SettingsDep, principal: UserDep,
    last_event_id: Annotated[StreamEntryId, Header(pattern=r"^\d{1,20}-\d{1,20}$",
                                                   description="Resume after this event")] = None,
    after: Annotated[StreamEntryId, Query(pattern=r"^\d{1,20}-\d{1,20}$",
                                          description="Same as Last-Event-ID, for clients that cannot set it")] = None,
) -> str | None:
    """The event to resume after, once the caller may read the stream. The ids are checked here, with the caller,
    so that a bad one is a 422 naming it rather than an error inside a stream already answered 200."""
    playground.check_reader(session, settings, principal, request_id)
    return last_event_id or after


@router.get("/playground/{request_id}/events",
            responses={**responses(401, 403, 404, 422), 200: {"content": {"text/event-stream": {}}}})
async def read_playground_events(
    request_id: RequestId,
    settings: SettingsDep,
    resume_after: Annotated[str | None, Depends(_stream_reader_resume)],
) -> StreamingResponse:
    """Server-Sent Events of one request, from its first token whenever the client connects: `started` {slot, turn
    (the request's place in the order the inference workers serve requests)}, `token` {slot, text}, `done` {slot,
    text, token_count, first_token_s, total_s}, `failed` {slot, message}, then `end`."""
    stream = playground.stream_events(settings, request_id, resume_after)
    return StreamingResponse(stream, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/runs/{run_id}/samples", response_model=RunSamplesPublic, responses=responses(401, 403, 404))
def read_run_samples(run: RunReader, settings: SettingsDep) -> RunSamplesPublic:
    """The completions the run's training wrote for a few eval prompts (samples.jsonl): prompt, expected, the base
    model's and the tuned model's (greedy). Share links read them too."""
    data = [RunSamplePublic.model_validate(sample) for sample in playground.read_samples(settings, run)]
    return RunSamplesPublic(data=data, count=len(data))


@router.get("/runs/{run_id}/rl-samples", response_model=RlSamplesPublic, responses=responses(401, 403, 404))
def read_run_rl_samples(run: RunReader, settings: SettingsDep) -> RlSamplesPublic:
    """The completions an online RL run (GRPO, RLOO) sampled while it trained, each with every reward that is on, the
    weighted total and its advantage: a few per eval (or per logged step without eval), newest step first, live while
    it trains. Empty for other runs. Share links read them too."""
    data = [RlSamplePublic.model_validate(row) for row in playground.read_rl_samples(settings, run)]
    return RlSamplesPublic(data=data, count=len(data))


@router.get("/runs/{run_id}/predictions", response_model=RunPredictionsPublic, responses=responses(401, 403, 404, 422))
def read_run_predictions(
    run: RunReader,
    settings: SettingsDep,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> RunPredictionsPublic:
    """The run's evaluation by generation (predictions.jsonl): per eval row, the prompt, the expected answer, the
    trained and the base model's greedy answers and each one's scores. Empty until the run has finished evaluating.
    Share links read them too."""
    rows, count = playground.read_predictions(settings, run, offset, limit)
    return RunPredictionsPublic(data=[RunPredictionPublic.model_validate(row) for row in rows], count=count,
                                offset=offset)
