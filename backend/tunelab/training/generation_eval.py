"""What a run generates on held-out prompts, beside what the base model generates: the samples table (a few greedy
completions with their logits) and evaluation by generation (greedy answers to a bounded number of eval rows,
scored against the expected answers with exact match, ROUGE-L and BLEU).

Eval loss says how likely the expected answer was; practitioners compare fine-tuning methods by what the model
answers (LLaMA-Factory's `do_predict`, H2O LLM Studio's validation predictions). The scores are computed by the
libraries papers use: ROUGE-L by Google's `rouge-score` (F1 of the longest common subsequence, its default
tokenizer, no stemming) and BLEU by `sacrebleu` (corpus BLEU, 13a tokenization, 0–100), so a test can check them by
calling the same libraries on `predictions.jsonl`.

The base model's answers are the baseline row. They depend only on the base model (as loaded: a QLoRA base is the
4-bit one), the prompts and the generation settings, so they are generated once per (model, split) and kept in a
cache folder by a key made of exactly those; other runs of the same model and split read them from there.
"""

import hashlib
import json
import logging
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tunelab.training.adapters import initialised_from_the_base
from tunelab.training.registry import Record
from tunelab.training.sink import RunSummary

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from tunelab.training.engine import TrainedModel
    from tunelab.training.models import CausalLM

logger = logging.getLogger("tunelab.training")

SAMPLE_COUNT = 3
SAMPLE_LOGITS = 16
SAMPLE_NEW_TOKENS = 8
# Generation after training gets this long in all, the base model's completions included (a DoRA adapter on a real
# model generated for 4+ minutes while the run showed nothing): what is not done by then is left out and said so.
SAMPLE_TIME_BUDGET_S = 90.0
# Evaluation by generation gets this long each time it runs (the base model's answers included, when not cached):
# rows not answered by then are not scored, and the run says how many were.
GENERATION_EVAL_TIME_BUDGET_S = 300.0
# Bumped when what a cached baseline holds, or how it is generated, changes: older entries are then not read.
BASELINE_CACHE_VERSION = 1

GENERATION_METRICS = ("exact_match", "rouge_l", "bleu")


def generation_prompt(tokenizer: "PreTrainedTokenizerBase", messages: list[dict[str, str]]) -> str:
    """The chat as text, up to the start of the assistant's answer."""
    # With tokenize=False the template renders one string; the declared return type covers every mode.
    return cast(str, tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))


def decode(tokenizer: "PreTrainedTokenizerBase", token_ids: "list[int] | torch.Tensor",
           skip_special_tokens: bool = False) -> str:
    # One sequence decodes to one string; the declared return type covers batches too.
    return cast(str, tokenizer.decode(token_ids, skip_special_tokens=skip_special_tokens))


def sample_prompt(record: Record, tokenizer: "PreTrainedTokenizerBase") -> tuple[str, str]:
    """(prompt text as the model sees it, expected continuation) for one record an objective's trainer takes."""
    if "prompt" in record:
        # A prompt/completion record, a preference pair, whose chosen answer is the one expected, or an online RL
        # prompt with its answer (none: nothing is expected).
        prompt = generation_prompt(tokenizer, record["prompt"])
        if "answer" in record:
            return prompt, record["answer"] or ""
        if record.get("label") is False:  # a rated answer (KTO) is expected only when it was rated desirable
            return prompt, ""
        return prompt, record["completion" if "completion" in record else "chosen"][0]["content"]
    if "messages" in record:
        messages = record["messages"]
        last_answer = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages))
        prompt = generation_prompt(tokenizer, messages[:last_answer])
        expected = messages[last_answer]["content"] if last_answer < len(messages) else ""
        return prompt, expected
    ids = tokenizer(record["text"], add_special_tokens=False)["input_ids"]
    half = max(1, len(ids) // 2)
    return decode(tokenizer, ids[:half]), decode(tokenizer, ids[half:])


class GenerationBudget:
    """Seconds left for a generation pass; each completion gets what is left (transformers' max_time stops a
    generation mid-way), and none is started once it is spent."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def greedy_completion(model: "TrainedModel", tokenizer: "PreTrainedTokenizerBase", input_ids: "torch.Tensor",
                      max_new_tokens: int, budget: GenerationBudget | None = None) -> str | None:
    """The greedy completion, special tokens left out; None when the budget was spent before it began."""
    import torch

    max_time = budget.left() if budget is not None else None
    if max_time is not None and max_time <= 0:
        return None
    with torch.no_grad():
        generated = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                   max_new_tokens=max_new_tokens, do_sample=False,
                                   pad_token_id=tokenizer.pad_token_id, max_time=max_time)
    # Prompt-learning PEFT models return only the new tokens; the others return prompt + new tokens.
    prompt_length = input_ids.shape[1]
    new_ids = generated[0, prompt_length:] if generated.shape[1] > max_new_tokens else generated[0]
    return decode(tokenizer, new_ids, skip_special_tokens=True)


@contextmanager
def base_model_of(model: "TrainedModel", load_base_model: "Callable[[], CausalLM] | None",
                  budget: GenerationBudget) -> Iterator["TrainedModel | None"]:
    """The base model to generate with beside the trained one: a PEFT model with its adapter switched off (a prompt-
    learning method's virtual tokens live beside the unchanged base); else the base loaded again, for full and freeze
    tuning and for an adapter that took its start out of the base (PiSSA) (None without a loader, or with no time
    left to load it)."""
    from peft import PeftModel

    if isinstance(model, PeftModel):
        adapter = model.peft_config[model.active_adapter]
        if adapter.is_prompt_learning:
            yield cast("TrainedModel", model.get_base_model())
            return
        if not initialised_from_the_base(adapter):
            with model.disable_adapter():
                yield model
            return
    if load_base_model is None or budget.left() <= 0:
        yield None
        return
    device = next(model.parameters()).device
    base = load_base_model().to(device).eval()  # type: ignore[arg-type]  # PreTrainedModel.to's wraps-typed signature
    try:
        yield base
    finally:
        del base


def write_samples(model: "TrainedModel", tokenizer: "PreTrainedTokenizerBase", records: list[Record],
                  path: Path, load_base_model: "Callable[[], CausalLM] | None" = None,
                  time_budget_s: float = SAMPLE_TIME_BUDGET_S) -> None:
    """Greedy completions and last-position logits of the trained model for a few fixed eval prompts, and the base
    model's completions of them, within `time_budget_s` in all: a completion cut short by it is marked, and one not
    begun is null."""
    import torch

    budget = GenerationBudget(time_budget_s)
    model.eval()
    device = next(model.parameters()).device
    chosen = [sample_prompt(record, tokenizer) for record in records[:SAMPLE_COUNT]]
    prompt_ids = [tokenizer(prompt, add_special_tokens=False)["input_ids"] for prompt, _ in chosen]
    inputs = [torch.tensor([ids], device=device) for ids in prompt_ids]
    samples = []
    for (prompt, expected), ids, input_ids in zip(chosen, prompt_ids, inputs, strict=True):
        with torch.no_grad():
            logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits[0, -1, :SAMPLE_LOGITS]
        samples.append({
            "prompt": prompt,
            "prompt_token_ids": ids,
            "expected": expected,
            "completion": greedy_completion(model, tokenizer, input_ids, SAMPLE_NEW_TOKENS, budget),
            "logits": logits.float().cpu().tolist(),
        })
    with base_model_of(model, load_base_model, budget) as base:
        for sample, input_ids in zip(samples, inputs, strict=True):
            sample["base_completion"] = (greedy_completion(base, tokenizer, input_ids, SAMPLE_NEW_TOKENS, budget)
                                         if base is not None else None)
    if budget.left() <= 0:
        logger.warning("sample generation stopped after its %.0f s budget", time_budget_s)
        for sample in samples:
            sample["time_budget_exceeded"] = True
    with path.open("w", encoding="utf-8") as out:
        for sample in samples:
            out.write(json.dumps(sample) + "\n")


# --- scores -------------------------------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"\s+")


def normalized_answer(text: str) -> str:
    """What exact match compares: case and runs of whitespace do not count, every other character does."""
    return _WHITESPACE.sub(" ", text).strip().casefold()


def exact_match(prediction: str, expected: str) -> float:
    return 1.0 if normalized_answer(prediction) == normalized_answer(expected) else 0.0


def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def row_scores(prediction: str, expected: str, scorer: Any | None = None) -> dict[str, float]:
    """One row's exact match (0 or 1), ROUGE-L F1 (0–1) and sentence BLEU (0–100)."""
    import sacrebleu

    scorer = scorer or _rouge_scorer()
    return {
        "exact_match": exact_match(prediction, expected),
        "rouge_l": float(scorer.score(expected, prediction)["rougeL"].fmeasure),
        "bleu": float(sacrebleu.sentence_bleu(prediction, [expected]).score),
    }


@dataclass(frozen=True)
class GenerationScores:
    """Scores of one model's answers over the scored rows."""

    exact_match: float  # fraction of rows answered exactly (0–1)
    rouge_l: float  # mean over rows of ROUGE-L F1 (0–1)
    bleu: float  # corpus BLEU over the rows (0–100)
    rows: int

    def as_metrics(self) -> dict[str, float]:
        return {f"eval/{name}": getattr(self, name) for name in GENERATION_METRICS}


def corpus_scores(predictions: list[str], references: list[str]) -> GenerationScores | None:
    """Exact match and ROUGE-L averaged over rows, and corpus BLEU (BLEU is defined over a corpus: the mean of
    sentence BLEUs is not BLEU); None for no rows."""
    import sacrebleu

    if not predictions:
        return None
    scorer = _rouge_scorer()
    return GenerationScores(
        exact_match=statistics.fmean(exact_match(p, r) for p, r in zip(predictions, references, strict=True)),
        rouge_l=statistics.fmean(float(scorer.score(r, p)["rougeL"].fmeasure)
                                 for p, r in zip(predictions, references, strict=True)),
        bleu=float(sacrebleu.corpus_bleu(predictions, [references]).score),
        rows=len(predictions),
    )


# --- evaluation by generation ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GenerationSettings:
    rows: int  # eval rows answered, from the start of the eval split
    max_new_tokens: int
    time_budget_s: float = GENERATION_EVAL_TIME_BUDGET_S


@dataclass(frozen=True)
class Question:
    prompt: str  # as the model sees it (the chat template applied)
    expected: str


def questions_of(records: list[Record], tokenizer: "PreTrainedTokenizerBase", rows: int) -> list[Question]:
    """The first `rows` eval rows with an expected answer, as prompts the model continues."""
    questions: list[Question] = []
    for record in records:
        if len(questions) == rows:
            break
        prompt, expected = sample_prompt(record, tokenizer)
        if expected.strip():
            questions.append(Question(prompt, expected))
    return questions


def answer(model: "TrainedModel", tokenizer: "PreTrainedTokenizerBase", questions: list[Question],
           max_new_tokens: int, budget: GenerationBudget) -> list[str | None]:
    """The model's greedy answer to each question; None for those the budget left unanswered."""
    import torch

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    answers = []
    for question in questions:
        ids = tokenizer(question.prompt, add_special_tokens=False)["input_ids"]
        answers.append(greedy_completion(model, tokenizer, torch.tensor([ids], device=device), max_new_tokens,
                                         budget))
    if was_training:
        model.train()
    return answers


def baseline_key(model_identity: str, questions: list[Question], settings: GenerationSettings) -> str:
    """What decides the base model's answers: the model as loaded, the exact prompts (the split and the chat template
    are in them) and the generation settings."""
    content = json.dumps({"version": BASELINE_CACHE_VERSION, "model": model_identity,
                          "max_new_tokens": settings.max_new_tokens,
                          "questions": [[q.prompt, q.expected] for q in questions]}, sort_keys=True)
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


class BaselineCache:
    """The base model's answers per key, one JSON file each, written whole (a temporary file renamed) so that a
    reader never sees half of one."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def read(self, key: str) -> list[str] | None:
        if self.folder is None:
            return None
        path = self.folder / f"{key}.json"
        try:
            answers = json.loads(path.read_text(encoding="utf-8"))["answers"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return answers if isinstance(answers, list) and all(isinstance(a, str) for a in answers) else None

    def write(self, key: str, answers: list[str]) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.folder / f".{key}.{time.monotonic_ns()}.tmp"
        temporary.write_text(json.dumps({"answers": answers}), encoding="utf-8")
        temporary.replace(self.folder / f"{key}.json")


@dataclass(frozen=True)
class GenerationEvaluation:
    questions: list[Question]
    tuned: list[str | None]
    base: list[str | None]  # all None when the base could not be generated with
    tuned_scores: GenerationScores | None
    base_scores: GenerationScores | None
    base_from_cache: bool
    cut_short: bool  # the time budget left rows unanswered

    def summary(self) -> RunSummary:
        summary: RunSummary = {"generation_rows_requested": len(self.questions)}
        if self.tuned_scores is not None:
            summary.update({"generation_exact_match": self.tuned_scores.exact_match,
                            "generation_rouge_l": self.tuned_scores.rouge_l,
                            "generation_bleu": self.tuned_scores.bleu,
                            "generation_rows": self.tuned_scores.rows})
        if self.base_scores is not None:
            summary.update({"base_generation_exact_match": self.base_scores.exact_match,
                            "base_generation_rouge_l": self.base_scores.rouge_l,
                            "base_generation_bleu": self.base_scores.bleu,
                            "base_generation_rows": self.base_scores.rows})
        return summary

    def prediction_rows(self) -> list[dict[str, Any]]:
        scorer = _rouge_scorer()
        rows = []
        for question, tuned, base in zip(self.questions, self.tuned, self.base, strict=True):
            rows.append({
                "prompt": question.prompt,
                "expected": question.expected,
                "tuned": tuned,
                "base": base,
                "tuned_scores": row_scores(tuned, question.expected, scorer) if tuned is not None else None,
                "base_scores": row_scores(base, question.expected, scorer) if base is not None else None,
            })
        return rows

    def write_predictions(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as out:
            for row in self.prediction_rows():
                out.write(json.dumps(row) + "\n")


def scores_of(answers: list[str | None], questions: list[Question]) -> GenerationScores | None:
    answered = [(a, q.expected) for a, q in zip(answers, questions, strict=True) if a is not None]
    return corpus_scores([a for a, _ in answered], [e for _, e in answered])


def evaluate_by_generation(model: "TrainedModel", tokenizer: "PreTrainedTokenizerBase", questions: list[Question],
                           settings: GenerationSettings, model_identity: str, cache: BaselineCache,
                           load_base_model: "Callable[[], CausalLM] | None" = None,
                           tuned: list[str | None] | None = None) -> GenerationEvaluation:
    """The trained model's answers (or `tuned`, answered already at the last eval) and the base model's (from the
    cache, or generated and then cached when complete), scored, within the settings' time budget."""
    budget = GenerationBudget(settings.time_budget_s)
    if tuned is None:
        tuned = answer(model, tokenizer, questions, settings.max_new_tokens, budget)
    key = baseline_key(model_identity, questions, settings)
    cached = cache.read(key)
    base: list[str | None]
    if cached is not None and len(cached) == len(questions):
        base = list(cached)
    else:
        with base_model_of(model, load_base_model, budget) as base_model:
            base = (answer(base_model, tokenizer, questions, settings.max_new_tokens, budget)
                    if base_model is not None else [None] * len(questions))
        complete = [a for a in base if a is not None]
        if len(complete) == len(questions) and budget.left() > 0:
            cache.write(key, complete)
    # A spent budget also cuts the answer it stopped mid-way, which is then scored as it stands.
    cut_short = budget.left() <= 0 or any(a is None for a in tuned)
    if cut_short:
        logger.warning("evaluation by generation stopped after its %.0f s budget", settings.time_budget_s)
    return GenerationEvaluation(questions=questions, tuned=tuned, base=base, tuned_scores=scores_of(tuned, questions),
                                base_scores=scores_of(base, questions), base_from_cache=cached is not None,
                                cut_short=cut_short)
