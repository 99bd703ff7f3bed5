from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tunelab.schemas.common import ResourceId

MAX_PLAYGROUND_RUNS = 6
MAX_PROMPT_CHARS = 20_000


class SamplingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(64, ge=1, le=512, description="Tokens generated at most per model")
    do_sample: bool = Field(False, description="Sample (with temperature, top_p, top_k); greedy when false")
    temperature: float = Field(1.0, gt=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(50, ge=0, le=1000, description="0: no top-k cut")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Makes a sampled completion reproducible")
    ignore_eos: bool = Field(False, description="Generate max_new_tokens even past the end-of-sequence token (what "
                                                "would the model say next?)")


class DatasetRowPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset_id: ResourceId
    row: int = Field(ge=0, description="0-based row of the dataset; its prompt part is sent, its answer expected")


class PlaygroundCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: ResourceId
    run_ids: list[ResourceId] = Field(default_factory=list, max_length=MAX_PLAYGROUND_RUNS,
                                      description="Succeeded runs of one base model; each gets a completion (none: "
                                      "only the given completion is scored)")
    include_base: bool = Field(True, description="A completion of the runs' base model too")
    prompt: str | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS)
    dataset_row: DatasetRowPrompt | None = Field(None, description="Instead of prompt: a row of a dataset")
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    reward_run: ResourceId | None = Field(None, description="A succeeded reward run of the project: its model scores "
                                          "the prompt with each completion (higher: preferred)")
    completion: str | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS,
                                   description="A completion of your own, scored by reward_run beside the models'")

    @model_validator(mode="after")
    def _one_prompt(self) -> "PlaygroundCreate":
        if (self.prompt is None) == (self.dataset_row is None):
            raise ValueError("give either prompt or dataset_row")
        if len(set(self.run_ids)) != len(self.run_ids):
            raise ValueError("run_ids: each run once")
        return self


class CompletionSlot(BaseModel):
    slot: int = Field(description="The slot's number in the stream's events")
    kind: Literal["base", "run", "given"] = Field(description="given: the request's own completion, scored only")
    run_id: int | None
    label: str
    chat_template: bool = Field(description="Whether the prompt went through the chat template the run trained with")


class PlaygroundPublic(BaseModel):
    id: str
    project_id: int
    prompt: str | list[dict[str, str]] = Field(description="The prompt text, or the dataset row's conversation")
    expected: str | None = Field(description="The dataset row's answer, when the prompt came from one")
    slots: list[CompletionSlot]
    scored_by: str | None = Field(None, description="The reward run that scores each completion, when one was given")
    events_url: str = Field(description="Server-Sent Events: `token` {slot, text}, `done` {slot, text, token_count, "
                                        "first_token_s, total_s}, `failed` {slot, message}, with a reward run `score` "
                                        "{slot, score} (or `score_failed` {slot, message}) after each done, then `end`")


class RunSamplePublic(BaseModel):
    prompt: str
    expected: str
    base: str | None = Field(description="The base model's greedy completion (runs trained before it was written "
                                         "have none)")
    tuned: str | None = Field(description="The trained model's greedy completion (None: not begun within the "
                                          "time budget of sample generation)")
    cut_short: bool = Field(False, description="Sample generation ran out of its time budget: completions may be cut "
                                               "or missing")


class RlSamplePublic(BaseModel):
    """A completion an online RL run (GRPO, RLOO) sampled while it trained, as its rewards scored it."""

    step: int
    split: Literal["train", "eval"] = Field(description="eval: an eval prompt's completion (the same prompts at every "
                                            "eval); train: the training batch's, in a run without eval")
    prompt: str
    completion: str
    expected: str | None = Field(description="The row's answer, which the match rewards check against")
    rewards: dict[str, float | None] = Field(description="Each reward that is on, by name (exact_match, numeric_match, "
                                             "format, length, reward_model), before its weight")
    reward: float | None = Field(description="The weighted sum the policy was trained on")
    advantage: float | None = Field(None, description="The completion's reward relative to its group's")


class RlSamplesPublic(BaseModel):
    data: list[RlSamplePublic]
    count: int


class RunSamplesPublic(BaseModel):
    data: list[RunSamplePublic]
    count: int


class PredictionScoresPublic(BaseModel):
    exact_match: float = Field(description="1 when the answer equals the expected one (case and whitespace aside)")
    rouge_l: float = Field(description="ROUGE-L F1, 0–1")
    bleu: float = Field(description="Sentence BLEU, 0–100 (the run's BLEU is over the whole corpus, not their mean)")


class RunPredictionPublic(BaseModel):
    prompt: str = Field(description="As the model saw it (the chat template applied)")
    expected: str
    tuned: str | None = Field(description="The trained model's greedy answer (None: not begun within the time budget)")
    base: str | None = Field(description="The base model's greedy answer to the same prompt: the baseline")
    tuned_scores: PredictionScoresPublic | None
    base_scores: PredictionScoresPublic | None


class RunPredictionsPublic(BaseModel):
    data: list[RunPredictionPublic]
    count: int = Field(description="Rows in the run's predictions, of which `data` is the page from `offset`")
    offset: int
