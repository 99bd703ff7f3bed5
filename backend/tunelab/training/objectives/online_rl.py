"""What the online RL objectives share (GRPO, RLOO): prompt records, their params (sampling, KL, clipping, the
rewards) and the reward functions. Not an objective of its own: it registers nothing.

The model writes a group of completions for each prompt; each completion's reward is a weighted sum of components
declared per run — verifiable checks against the row's `answer` (exact or numeric match), a format check (a regular
expression), a length penalty, and the score of a reward run's model. No user code runs on the server: a pattern is
data, matched with a time limit."""

import contextlib
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast
from unittest import mock

import regex
from pydantic import Field, field_validator, model_validator

from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.sft import instruction_prompt
from tunelab.training.registry import ObjectiveParams, Record, TrainerInputs

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, Trainer

# How long one completion's format check may take: a pathological pattern cannot stall training.
FORMAT_MATCH_TIMEOUT_S = 0.05
# The name the reward model's score is logged under (rewards/reward_model/mean).
REWARD_MODEL_NAME = "reward_model"
REWARD_COMPONENTS = ("exact_match", "numeric_match", "format", "length", REWARD_MODEL_NAME)
METRIC_KEYS: tuple[str, ...] = (
    "reward", "reward_std", "frac_reward_zero_std", "kl", "entropy",
    "completions/mean_length", "completions/min_length", "completions/max_length", "completions/clipped_ratio",
    "clip_ratio/region_mean", "clip_ratio/low_mean", "clip_ratio/high_mean",
    *(f"rewards/{name}/{stat}" for name in REWARD_COMPONENTS for stat in ("mean", "std")),
)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


class OnlineRlParams(ObjectiveParams):
    num_generations: int = Field(
        4, ge=2, le=64, title="Group size",
        description="Completions sampled for each prompt; each is scored against its group's mean (TRL's default is "
        "8). The batch (per-device batch × accumulation × processes) must be a multiple of it",
    )
    max_completion_length: int = Field(
        128, ge=1, le=8192, title="Max completion length",
        description="Tokens a completion may have at most; a completion cut there counts in completions/clipped_ratio",
    )
    temperature: float = Field(1.0, gt=0, le=2, title="Temperature", description="Sampling temperature of the "
                               "completions: higher explores more")
    epsilon: float = Field(0.2, gt=0, le=1, title="Clip range", description="How far one update may move a token's "
                           "probability ratio (PPO's ε)")
    reward_exact_match: float = Field(
        1.0, ge=0, le=100, title="Exact-match reward (weight)",
        description="1 when the completion is the row's answer (case and surrounding space ignored), else 0; "
        "0 turns it off. Needs an answer in every row",
    )
    reward_numeric_match: float = Field(
        0.0, ge=0, le=100, title="Numeric-match reward (weight)",
        description="1 when the last number in the completion equals the row's answer as a number, else 0; "
        "0 turns it off. Needs an answer in every row",
    )
    reward_format_pattern: str | None = Field(
        None, max_length=500, title="Format pattern",
        description="A regular expression the whole completion must match for the format reward (e.g. "
        "'<think>.*</think>.*'); a dot matches newlines",
    )
    reward_format: float = Field(0.0, ge=0, le=100, title="Format reward (weight)",
                                 description="1 when the completion matches the format pattern, else 0; 0 turns it off")
    reward_length_target: int = Field(0, ge=0, le=8192, title="Target length (tokens)",
                                      description="The completion length the length penalty aims at; 0: no target")
    reward_length: float = Field(
        0.0, ge=0, le=100, title="Length penalty (weight)",
        description="−|length − target| / target for each completion; 0 turns it off",
    )
    reward_model_run: int | None = Field(
        None, ge=1, title="Reward model run",
        description="A succeeded reward run of this project: its model's score of each completion is a reward",
    )
    reward_model: float = Field(1.0, ge=0, le=100, title="Reward model (weight)",
                                description="Weight of the reward model's score, when a reward model run is given")

    @field_validator("reward_format_pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _rewards_declared(self) -> "OnlineRlParams":
        if not reward_weights(self):
            raise ValueError("no reward is on: give a reward a weight above 0 (exact or numeric match, a format "
                             "pattern, a target length, or a reward model run)")
        if self.reward_format and self.reward_format_pattern is None:
            raise ValueError("reward_format: a format reward needs reward_format_pattern")
        if self.reward_length and not self.reward_length_target:
            raise ValueError("reward_length: a length penalty needs reward_length_target")
        batch = getattr(self, "per_device_train_batch_size", 0) * getattr(self, "gradient_accumulation_steps", 1)
        if batch % self.num_generations:
            raise ValueError(f"num_generations: a group of {self.num_generations} does not divide the batch of "
                             f"{batch} completions (per_device_train_batch_size × gradient_accumulation_steps)")
        return self


def reward_weights(params: OnlineRlParams) -> dict[str, float]:
    """The reward components that are on, by name, with their weights."""
    declared = {
        "exact_match": params.reward_exact_match,
        "numeric_match": params.reward_numeric_match,
        "format": params.reward_format if params.reward_format_pattern is not None else 0.0,
        "length": params.reward_length if params.reward_length_target else 0.0,
        REWARD_MODEL_NAME: params.reward_model if params.reward_model_run is not None else 0.0,
    }
    return {name: weight for name, weight in declared.items() if weight > 0}


def keeps_reference_with(params: Any) -> bool:
    """TRL's GRPO and RLOO trainers load a reference model only for a KL term (beta above 0)."""
    return bool(params.beta > 0)


def prompt_records(rows: list[Record], dataset_format: str, objective: str) -> list[Record]:
    """Rows → TRL's conversational prompt records with the row's answer beside them (None when it has none):
    prompt rows as they are, instruction rows as their instruction (and input) with the output as the answer."""
    if dataset_format == DatasetFormat.prompt:
        return [{"prompt": [{"role": "user", "content": row["prompt"]}],
                 "answer": None if row.get("answer") is None else str(row["answer"])} for row in rows]
    if dataset_format == DatasetFormat.instruction:
        return [{"prompt": [{"role": "user", "content": instruction_prompt(row["instruction"], row.get("input", ""))}],
                 "answer": row["output"]} for row in rows]
    raise ValueError(f"the {objective} objective takes prompt or instruction datasets, not {dataset_format!r}")


def prompt_lengths(records: list[Record], tokenizer: "PreTrainedTokenizerBase") -> list[int]:
    """Each prompt's token length as the policy continues it (chat template and generation prompt included)."""
    return [len(tokenizer(tokenizer.apply_chat_template(record["prompt"], tokenize=False, add_generation_prompt=True),
                          add_special_tokens=False)["input_ids"]) for record in records]


def _text(completion: Any) -> str:
    # A conversational completion is a list of messages; the answer is the last one's content.
    return completion[-1]["content"] if isinstance(completion, list) else str(completion)


def _normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


def _number(text: str | None, last: bool) -> float | None:
    found = _NUMBER.findall(text or "")
    if not found:
        return None
    return float(found[-1 if last else 0].replace(",", ""))


def exact_match(completions: Sequence[Any], answer: Sequence[str | None], **_: Any) -> list[float]:
    return [float(_normalized(_text(c)) == _normalized(a or "")) for c, a in zip(completions, answer, strict=True)]


def numeric_match(completions: Sequence[Any], answer: Sequence[str | None], **_: Any) -> list[float]:
    scores = []
    for completion, expected in zip(completions, answer, strict=True):
        got, want = _number(_text(completion), last=True), _number(expected, last=False)
        scores.append(float(got is not None and want is not None and math.isclose(got, want, abs_tol=1e-9)))
    return scores


def format_reward(pattern: str) -> Callable[..., list[float]]:
    compiled = regex.compile(pattern, regex.DOTALL)

    def matches(text: str) -> bool:
        try:
            return compiled.fullmatch(text, timeout=FORMAT_MATCH_TIMEOUT_S) is not None
        except TimeoutError:  # a pattern that backtracks without end: no match
            return False

    def format(completions: Sequence[Any], **_: Any) -> list[float]:  # noqa: A001  (the name TRL logs it under)
        return [float(matches(_text(c))) for c in completions]

    return format


def length_reward(target: int) -> Callable[..., list[float]]:
    def length(completions: Sequence[Any], completion_ids: Sequence[Sequence[int]], **_: Any) -> list[float]:
        return [-abs(len(ids) - target) / target for ids in completion_ids]

    return length


def check_answers(records: list[Record], params: OnlineRlParams) -> None:
    """A match reward compares with each row's answer: refuse rows without one before any training."""
    weights = reward_weights(params)
    needs = [name for name in ("exact_match", "numeric_match") if name in weights]
    missing = sum(1 for record in records if record["answer"] is None)
    if needs and missing:
        raise ValueError(f"reward_{needs[0]}: {missing} of {len(records)} rows have no answer to compare with; give "
                         f"every row an answer, or set reward_{needs[0]} to 0 and use another reward")


def reward_functions(inputs: TrainerInputs) -> tuple[list[Any], list[Any], list[float]]:
    """(reward functions, their tokenizers, their weights) for TRL's online trainers, in the order of
    REWARD_COMPONENTS; a reward model is the loaded model, which TRL runs on prompt + completion."""
    params: OnlineRlParams = inputs.params
    check_answers(inputs.train_records + inputs.eval_records, params)
    functions: dict[str, Callable[[], Any]] = {
        "exact_match": lambda: exact_match,
        "numeric_match": lambda: numeric_match,
        "format": lambda: format_reward(params.reward_format_pattern or ""),
        "length": lambda: length_reward(params.reward_length_target),
    }
    funcs: list[Any] = []
    tokenizers: list[Any] = []
    weights: list[float] = []
    for name, weight in reward_weights(params).items():
        if name == REWARD_MODEL_NAME:
            if inputs.load_reward_model is None:
                raise ValueError("reward_model_run: the run's reward model was not given to the trainer")
            model, tokenizer = inputs.load_reward_model()
            model.config._name_or_path = REWARD_MODEL_NAME  # what TRL names its reward in the logs
            funcs.append(model)
            tokenizers.append(tokenizer)
        else:
            funcs.append(functions[name]())
            tokenizers.append(None)
        weights.append(weight)
    return funcs, tokenizers, weights


def online_arguments(arguments: dict[str, Any], params: OnlineRlParams) -> dict[str, Any]:
    """The shared trainer arguments as an online trainer takes them: it samples its own completions, so there is no
    max_length to cut at (max_completion_length bounds what it writes; prompts are not cut)."""
    arguments = {key: value for key, value in arguments.items() if key != "max_length"}
    return {
        **arguments,
        "num_generations": params.num_generations,
        "max_completion_length": params.max_completion_length,
        "temperature": params.temperature,
        "epsilon": params.epsilon,
    }


def build_online_trainer(inputs: TrainerInputs, config_class: Any, trainer_class: Any, beta: float) -> "Trainer":
    """A TRL online trainer (GRPOTrainer, RLOOTrainer and their configs) with the run's declared rewards; it records
    sample completions with their rewards in the run's rl_samples.jsonl."""
    from datasets import Dataset

    from tunelab.training.arguments import trainer_arguments
    from tunelab.training.rl_samples import RL_SAMPLES_FILE, RlSamplesCallback, expected_answers

    funcs, tokenizers, weights = reward_functions(inputs)
    args = config_class(**online_arguments(trainer_arguments(inputs), inputs.params), beta=beta,
                        reward_weights=weights)
    reference: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if beta > 0 and inputs.peft_config is None:
        # TRL takes no reference model: it loads one from the policy's config path, the bare base, whereas a run that
        # starts from a run (GRPO after SFT) starts from that run's weights merged in. The reference is what the run
        # started from, loaded as the policy was (as DPO's ref_model is); TRL then prepares it as its own.
        reference = mock.patch.object(sys.modules[trainer_class.__module__], "create_model_from_path",
                                      lambda *_, **__: inputs.load_base_model())
    with reference:
        trainer = cast("Trainer", trainer_class(
            model=inputs.model, reward_funcs=funcs, args=args, train_dataset=Dataset.from_list(inputs.train_records),
            eval_dataset=Dataset.from_list(inputs.eval_records) if inputs.eval_records else None,
            processing_class=inputs.tokenizer, reward_processing_classes=tokenizers, peft_config=inputs.peft_config,
            callbacks=inputs.callbacks))
    if inputs.output_dir is not None:
        answers = expected_answers(inputs.train_records + inputs.eval_records)
        trainer.add_callback(RlSamplesCallback(trainer, inputs.output_dir / RL_SAMPLES_FILE, answers))
    return trainer


def prompt_converter(objective: str) -> Callable[[list[Record], str], list[Record]]:
    """The convert_rows of an online RL objective: its refusals name that objective."""

    def convert_rows(rows: list[Record], dataset_format: str) -> list[Record]:
        return prompt_records(rows, dataset_format, objective)

    return convert_rows
