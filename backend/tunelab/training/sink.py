"""What the engine reports to, and asks about cancellation. The service layer implements it (SQL + Redis);
tests implement it with a list. The engine never knows which."""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict


class RunSummary(TypedDict, total=False):
    """Run-level figures; the engine reports any subset of them, as it learns them."""

    trainable_params: int
    total_params: int
    trainable_percent: float
    peak_memory_bytes: int  # what runs are compared by: CUDA's max allocated on a GPU, the model state elsewhere
    model_state_bytes: int  # parameters + gradients + optimizer states, counted from the tensors
    model_state_weights_bytes: int
    model_state_gradients_bytes: int
    model_state_optimizer_states_bytes: int
    cuda_peak_memory_bytes: int  # on a GPU only
    process_peak_rss_bytes: int
    runtime_rss_bytes: int  # the process's RSS before loading any data or model: the libraries' own share
    wall_time_s: float
    tokens_per_second: float  # training tokens over the time inside training steps (evaluations excluded)
    # What tokens_per_second is measured on, this attempt's logged steps: how many, their tokens and their time. Runs
    # with different tokens per step tell a step's fixed cost (the optimizer's update) from its cost per token.
    train_steps_timed: int
    train_tokens_timed: float
    train_seconds_timed: float
    # What max_length cuts, counted on the trainer's token sequences of every row (train and eval split).
    tokenized_rows: int
    truncated_rows: int  # rows longer than max_length
    truncated_tokens: int  # tokens past max_length, which training never sees
    final_eval_loss: float
    best_eval_loss: float
    final_eval_perplexity: float
    # Evaluation by generation (training/generation_eval.py): the trained model's greedy answers to the first
    # generation_rows_requested eval rows, and the base model's to the same rows, scored against the expected answers.
    generation_rows_requested: int
    generation_rows: int  # rows answered within the time budget, which the scores cover
    generation_exact_match: float  # 0–1
    generation_rouge_l: float  # mean ROUGE-L F1, 0–1
    generation_bleu: float  # corpus BLEU, 0–100
    base_generation_rows: int
    base_generation_exact_match: float
    base_generation_rouge_l: float
    base_generation_bleu: float
    # Preference objectives, at the last eval: the fraction of eval pairs whose chosen answer the policy rewards above
    # the rejected one, and the mean reward margin (both relative to the frozen base, on which they are 0).
    reward_accuracy: float
    reward_margin: float


def perplexity(loss: float) -> float:
    """exp(loss) of a next-token loss, clamped where exp would overflow a float (past ~709)."""
    return math.exp(min(loss, 700.0))


# What a run's process is doing, for the moments when the step count says nothing: reading the data and loading the
# model take minutes on a real model before step 1, and the closing evaluation, save and generation minutes after the
# last step.
RunPhase = Literal["loading_data", "loading_model", "evaluating", "training", "saving", "generating"]


class RunSink(Protocol):
    def phase(self, phase: RunPhase) -> None:
        """The process moved on to `phase` (may be called again with the same one)."""

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        """Record metric points for one step (keys like "train/loss"); may buffer."""

    def progress(self, step: int, total_steps: int) -> None:
        """The trainer finished `step` of `total_steps`."""

    def should_cancel(self) -> bool:
        """True once a user asked the run to stop; checked at every step end, so it must be cheap."""

    def set_summary(self, values: RunSummary) -> None:
        """Run-level figures (any subset; may be called more than once)."""

    def checkpoint_saved(self, step: int) -> None:
        """A complete checkpoint of `step` is on disk under the job's checkpoints folder."""

    def flush(self) -> None:
        """Write out anything buffered (called at the end of training and before returning)."""


@dataclass(frozen=True)
class StartingWeights:
    """Another run's trained weights that a run starts from, applied in order on top of the base model: a PEFT
    adapter merged into the weights, or a full fine-tuning's whole model in place of them."""

    kind: Literal["adapter", "model"]
    path: Path  # the run's adapter/ or model/ folder
    source: str = ""  # the run, as its config.json names it ("run 12 · sft-lora"): never a server path


@dataclass(frozen=True)
class ScoringModel:
    """A reward run's model, which scores an online RL run's completions: its base with the reward run's weights (and
    those it started from) applied, and the tokenizer it trained with."""

    base: str  # the reward run's base model (directory, GGUF file or hub id reachable by this worker)
    weights: tuple[StartingWeights, ...]
    tokenizer_dir: Path
    source: str  # the reward run, as config.json names it ("run 14 · reward-lora")


@dataclass
class TrainingJob:
    """Everything the engine needs, resolved by the caller: no database ids, only paths and values."""

    objective: str  # registry name of the objective, e.g. "sft"
    method: str  # registry name of the method, e.g. "lora"
    model: str  # local directory, GGUF file, or Hugging Face id reachable by this worker
    dataset_path: Path  # JSONL file
    dataset_format: str  # a DatasetFormat value: "text", "instruction", "chat", "preference", "feedback" …
    params: dict[str, Any]  # the method's validated config, every field present
    output_dir: Path  # the run's artifact folder; created by the caller
    # Continue from the newest complete checkpoint in output_dir/checkpoints (a lost worker, a user's resume); with
    # none there it starts from the beginning.
    resume: bool = False
    # Picks the eval split, fixed with the dataset so that runs of any seed evaluate on the same rows; None (runs
    # launched before datasets had one) splits by the training seed, as those runs did.
    split_seed: int | None = None
    # How often the training process logs its CPU, memory and GPU use as system/* metrics.
    system_metrics_interval_s: float = 5.0
    # How the run names its model and dataset, written to config.json and the log (which the run's viewers and share
    # links read) in place of `model` and `dataset_path`, this worker's paths. Empty for a job given only paths.
    model_name: str = ""
    dataset_name: str = ""
    # Where the base model's answers for evaluation by generation are kept between runs of the same model and split;
    # None generates them in every run.
    baseline_cache_dir: Path | None = None
    # What tells the base weights at `model` apart from others once at that path (services.catalog.models.model_identity's
    # digest), part of the baseline cache's key.
    model_digest: str = ""
    # Runs that start from runs (SFT after continued pretraining, DPO after SFT): the weights the run starts from, on
    # top of `model`, and the tokenizer the last of them trained with (its chat template). Empty: the base itself.
    start_from: tuple[StartingWeights, ...] = ()
    start_tokenizer_dir: Path | None = None
    # The reward model an online RL objective (GRPO, RLOO) scores completions with, when the run names a reward run.
    reward_model: ScoringModel | None = None


@dataclass
class TrainingResult:
    canceled: bool
    summary: RunSummary = field(default_factory=RunSummary)


class SilentSink:
    """The RunSink of every process of a multi-process run but rank 0, which reports for the run: the ranks train
    the same steps, so theirs would only repeat rank 0's figures. A cancel reaches them from rank 0 through the
    trainer callback."""

    def phase(self, phase: RunPhase) -> None:
        pass

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        pass

    def progress(self, step: int, total_steps: int) -> None:
        pass

    def should_cancel(self) -> bool:
        return False

    def set_summary(self, values: RunSummary) -> None:
        pass

    def checkpoint_saved(self, step: int) -> None:
        pass

    def flush(self) -> None:
        pass
