"""The fair cost table of a study or a comparison: per cell (method and grid values), the mean and spread over seeds
of what a run costs and reaches, with a "best" only where it beats the runner-up by more than the noise. Only runs
that succeeded are measured: a running run's eval loss at step 0, or a run canceled at step 4, is no figure of what
its method costs or reaches; such runs are listed with where they stand, never ranked.

Pure: it takes the figures of each run and knows no SQL, so its rules are tested on plain values."""

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tunelab.schemas.studies import CostBaseline, CostColumn, CostRow, CostTablePublic, CostValue, GridValue

# Below this relative difference, two single-seed measurements of time or process memory are noise: a CPU process's
# resident set and step times move by a few percent from one run to the next of the same config.
SINGLE_SEED_NOISE = 0.05


@dataclass(frozen=True)
class EvalSplit:
    """What decides which rows a run evaluates on."""

    dataset: str  # the dataset's content hash (or id, for runs without one)
    split_seed: int | None
    eval_fraction: float

    def describe(self) -> str:
        return f"dataset {self.dataset[:12]} with split seed {self.split_seed} and eval fraction {self.eval_fraction:g}"


@dataclass(frozen=True)
class RunFigures:
    """One run, as the cost table reads it."""

    run_id: int
    method: str
    grid: dict[str, GridValue]
    base_model: str  # the model and its tokenizer: eval losses of different ones are not comparable
    eval_split: EvalSplit | None  # None: the run did not evaluate (or is external and did not say)
    status: str = "succeeded"  # a RunStatus value: only succeeded runs are measured
    step: int | None = None  # where an unfinished run stands, for its description
    total_steps: int | None = None
    tokens_per_second: float | None = None  # inside training steps, evaluations excluded
    trainable_percent: float | None = None
    model_state_bytes: int | None = None
    cuda_peak_bytes: int | None = None
    process_peak_rss_bytes: int | None = None
    best_eval_loss: float | None = None
    eval_losses: Sequence[tuple[int, float]] = ()  # (step, eval loss), by step
    # Training tokens seen by a step, as the trainer counted them (None: not logged by then); read only for the step
    # a run reaches the target at, so a long run's whole token history is never loaded.
    tokens_seen_at: Callable[[int], float | None] | None = None
    tokens_per_step: float | None = None  # padded batch × max_length, where tokens seen were not logged
    # Evaluation by generation: the scores of the run's answers and of the base model's to the same rows, and what
    # decides those rows and answers beyond the eval split (rows requested, max new tokens).
    generation_exact_match: float | None = None
    generation_rouge_l: float | None = None
    generation_bleu: float | None = None
    base_generation: dict[str, float] | None = None  # the same keys as the run's own, for the base model
    generation_setting: tuple[int, int] | None = None
    reward_accuracy: float | None = None  # preference objectives, at the last eval

    @property
    def finished(self) -> bool:
        return self.status == "succeeded"

    def standing(self) -> str:
        """Where an unfinished run stands, e.g. 'run 12: running, step 40 of 60'."""
        at = f"step {self.step or 0}" + (f" of {self.total_steps}" if self.total_steps else "")
        return f"run {self.run_id}: {self.status}" + ("" if self.status == "queued" else f", {at}")

    @property
    def cell(self) -> str:
        values = ", ".join(f"{name}={value}" for name, value in sorted(self.grid.items()))
        return f"{self.method} · {values}" if values else self.method


@dataclass(frozen=True)
class _Column:
    key: str
    label: str
    unit: str
    measured: bool  # a measurement that moves between identical runs (time, process memory), not a count
    compares_eval: bool = False  # an eval loss, or derived from one: needs one tokenizer and one eval split
    # Scores of generated text: comparable across tokenizers, but only on the same rows answered the same way.
    compares_generation: bool = False
    better: Literal["lower", "higher"] = "lower"


COLUMNS = (
    _Column("seconds_per_1k_tokens", "Training time per 1k tokens (eval excluded)", "s", measured=True),
    _Column("trainable_percent", "Trainable params", "%", measured=False),
    _Column("model_state_bytes", "Model state memory", "bytes", measured=False),
    _Column("cuda_peak_bytes", "CUDA peak memory", "bytes", measured=True),
    _Column("process_peak_rss_bytes", "Process peak memory (RSS)", "bytes", measured=True),
    _Column("best_eval_loss", "Best eval loss", "", measured=False, compares_eval=True),
    _Column("tokens_to_target", "Tokens to target loss", "tokens", measured=False, compares_eval=True),
    _Column("generation_rouge_l", "ROUGE-L (generated answers)", "", measured=False, compares_generation=True,
            better="higher"),
    _Column("generation_exact_match", "Exact match (generated answers)", "fraction", measured=False,
            compares_generation=True, better="higher"),
    _Column("generation_bleu", "BLEU (generated answers)", "", measured=False, compares_generation=True,
            better="higher"),
    _Column("reward_accuracy", "Reward accuracy (eval pairs)", "fraction", measured=False, compares_eval=True,
            better="higher"),
)
GENERATION_KEYS = tuple(column.key for column in COLUMNS if column.compares_generation)


def tokens_to_reach(run: RunFigures, target: float) -> float | None:
    """Training tokens seen when the run's eval loss first reached `target` (None: it never did)."""
    step = next((s for s, loss in run.eval_losses if loss <= target), None)
    if step is None:
        return None
    seen = run.tokens_seen_at(step) if run.tokens_seen_at is not None else None
    if seen is not None:
        return seen
    return step * run.tokens_per_step if run.tokens_per_step else None


def _value(run: RunFigures, key: str, target: float | None) -> float | None:
    if key == "seconds_per_1k_tokens":
        return 1000.0 / run.tokens_per_second if run.tokens_per_second else None
    if key == "tokens_to_target":
        return tokens_to_reach(run, target) if target is not None else None
    value = getattr(run, key)
    return float(value) if value is not None else None


def _summarize(values: list[float]) -> CostValue | None:
    if not values:
        return None
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return CostValue(mean=statistics.fmean(values), spread=spread, n=len(values))


def beats_noise(best: CostValue, runner_up: CostValue, measured: bool) -> bool:
    """Whether the best mean is ahead of the runner-up's by more than the noise: the larger of the two spreads over
    seeds, and for a measurement of one run each, SINGLE_SEED_NOISE of the larger value."""
    noise = max(best.spread, runner_up.spread)
    if measured and best.n == 1 and runner_up.n == 1:
        noise = max(noise, SINGLE_SEED_NOISE * max(abs(best.mean), abs(runner_up.mean)))
    return abs(runner_up.mean - best.mean) > noise


def eval_ranking_refusal(runs: Sequence[RunFigures]) -> str | None:
    """Why eval losses of these runs may not be ranked against each other, or None when they may."""
    models = sorted({run.base_model for run in runs})
    if len(models) > 1:
        return f"not ranked: runs use different base models and tokenizers: {', '.join(models)}"
    splits = {run.eval_split for run in runs if run.eval_split is not None}
    if len(splits) > 1:
        described = "; ".join(sorted(split.describe() for split in splits))
        return f"not ranked: runs use different eval splits: {described}"
    return None


def generation_ranking_refusal(runs: Sequence[RunFigures]) -> str | None:
    """Why generation scores of these runs may not be ranked against each other, or None when they may."""
    scored = [run for run in runs if run.generation_setting is not None]
    splits = {run.eval_split for run in scored if run.eval_split is not None}
    if len(splits) > 1:
        described = "; ".join(sorted(split.describe() for split in splits))
        return f"not ranked: runs answered different eval splits: {described}"
    settings = sorted({run.generation_setting for run in scored if run.generation_setting is not None})
    if len(settings) > 1:
        described = "; ".join(f"{rows} rows, at most {tokens} new tokens" for rows, tokens in settings)
        return f"not ranked: runs answered different rows or answer lengths: {described}"
    return None


def baseline_of(runs: Sequence[RunFigures]) -> CostBaseline | None:
    """The base model's generation scores, the row every cell is read against: there when the finished runs share
    one base model, split and generation setting (the base's answers are then the same for all of them)."""
    scored = [run for run in runs if run.finished and run.base_generation is not None]
    if not scored or len({run.base_model for run in scored}) > 1 or generation_ranking_refusal(scored):
        return None
    first = scored[0]
    assert first.base_generation is not None
    return CostBaseline(label=f"base model {first.base_model} (no training)",
                        values={key: first.base_generation[key] for key in GENERATION_KEYS
                                if key in first.base_generation})


@dataclass
class _Cell:
    method: str
    grid: dict[str, GridValue]
    runs: list[RunFigures] = field(default_factory=list)

    @property
    def finished(self) -> list[RunFigures]:
        return [run for run in self.runs if run.finished]


def _before_training_refusal(values: dict[str, dict[str, CostValue | None]]) -> str | None:
    """Tokens to target counts nothing when every cell reached the target with no training at all: the worst cell
    never improved on the eval loss of the model it started from, which every cell shares."""
    reached = [cell["tokens_to_target"] for cell in values.values() if cell["tokens_to_target"] is not None]
    if reached and all(value.mean == 0 for value in reached):
        return ("not ranked: every cell reached the target loss before its first training step (the worst cell did "
                "not improve on the starting eval loss)")
    return None


def cost_table(runs: Sequence[RunFigures], target_loss: float | None = None) -> CostTablePublic:
    cells: dict[str, _Cell] = {}
    for run in runs:
        cells.setdefault(run.cell, _Cell(run.method, run.grid)).runs.append(run)
    finished = [run for run in runs if run.finished]
    refusal = eval_ranking_refusal(finished)
    if target_loss is None:
        best_losses = [_summarize([r.best_eval_loss for r in cell.finished if r.best_eval_loss is not None])
                       for cell in cells.values()]
        measured_losses = [summary.mean for summary in best_losses if summary is not None]
        target_loss = max(measured_losses) if measured_losses else None
    values = {name: {column.key: _summarize([v for run in cell.finished
                                             if (v := _value(run, column.key, target_loss)) is not None])
                     for column in COLUMNS}
              for name, cell in cells.items()}
    refusals = {column.key: refusal for column in COLUMNS if column.compares_eval and refusal}
    if generation_refusal := generation_ranking_refusal(finished):
        refusals.update({column.key: generation_refusal for column in COLUMNS if column.compares_generation})
    if "tokens_to_target" not in refusals and (before_training := _before_training_refusal(values)):
        refusals["tokens_to_target"] = before_training
    best: dict[str, list[str]] = {name: [] for name in cells}
    columns = []
    for column in COLUMNS:
        column_refusal = refusals.get(column.key)
        ranked = column_refusal is None
        columns.append(CostColumn(key=column.key, label=column.label, unit=column.unit, better=column.better,
                                  ranked=ranked, not_ranked_reason=column_refusal))
        if not ranked:
            continue
        sign = 1 if column.better == "lower" else -1
        measured_cells = sorted(((summary.mean, name, summary) for name in cells
                                 if (summary := values[name][column.key]) is not None),
                                key=lambda item: sign * item[0])
        if len(measured_cells) >= 2 and beats_noise(measured_cells[0][2], measured_cells[1][2], column.measured):
            best[measured_cells[0][1]].append(column.key)
    notes = list(dict.fromkeys(refusals.values()))
    if not finished:
        notes.insert(0, "nothing ranked yet: no run has finished")
    elif len(finished) < len(runs):
        notes.insert(0, f"{len(finished)} of {len(runs)} runs finished; figures and bests are over those only")
    notes.append("best: ahead of the runner-up by more than the larger spread over seeds (and, for time and process "
                 f"memory measured once, by more than {SINGLE_SEED_NOISE:.0%})")
    rows = [CostRow(cell=name, method=cell.method, grid=cell.grid, run_ids=[r.run_id for r in cell.runs],
                    finished_run_ids=[r.run_id for r in cell.finished],
                    unfinished=[r.standing() for r in cell.runs if not r.finished],
                    values=values[name], best=best[name]) for name, cell in cells.items()]
    return CostTablePublic(columns=columns, rows=rows,
                           target_loss=target_loss if target_loss is None or math.isfinite(target_loss) else None,
                           notes=notes, baseline=baseline_of(finished))
