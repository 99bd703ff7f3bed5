"""Sample completions of an online RL run (GRPO, RLOO) with how each was scored, in the run's rl_samples.jsonl.

TRL's online trainers keep the latest batch's prompts, completions, per-function rewards and advantages in
`trainer._logs` (what their `log_completions` prints and sends to wandb); the callback copies a few of them at each
record point. Nothing is generated again and no random number is drawn, so training is the same with it or without."""

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from tunelab.training.registry import Record

if TYPE_CHECKING:
    from transformers import Trainer, TrainerControl, TrainerState, TrainingArguments

RL_SAMPLES_FILE = "rl_samples.jsonl"  # services.evaluation.playground reads it (GET /runs/{id}/rl-samples)
SAMPLES_PER_RECORD = 4
# Record points are spaced over the run so that it writes at most this many rows, its last step included.
MAX_ROWS = 200


def message_text(value: Any) -> str:
    """A prompt's or completion's text: a conversational one is a list of messages, its text the last one's."""
    return value[-1]["content"] if isinstance(value, list) else str(value)


def expected_answers(records: list[Record]) -> dict[str, str | None]:
    """Each prompt's answer, by the prompt's text; None where it has none or where its rows give different ones."""
    answers: dict[str, str | None] = {}
    for record in records:
        prompt = message_text(record["prompt"])
        answers[prompt] = record["answer"] if answers.get(prompt, record["answer"]) == record["answer"] else None
    return answers


def _finite(value: float) -> float | None:
    # A reward function may return None for a completion: TRL keeps NaN, which JSON has no word for.
    return None if math.isnan(value) else value


class RlSamplesCallback(TrainerCallback):
    """Appends SAMPLES_PER_RECORD of the latest completions with their rewards to `path`. A run that evaluates
    records the eval prompts' completions at each evaluation (the same prompts each time: a reader sees one prompt's
    answers change); a run without an eval split records the training batch's at its logging steps and its last
    step. Record points are at least `stride` steps apart (the last step excepted), so a run writes at most
    MAX_ROWS rows; rank 0 writes them (TRL gathers every rank's completions there)."""

    def __init__(self, trainer: "Trainer", path: Path, answers: dict[str, str | None]) -> None:
        # A GRPOTrainer or RLOOTrainer: what it keeps of its latest batch is not in Trainer's type.
        self.trainer: Any = trainer
        self.path = path
        self.answers = answers
        self.evaluates = trainer.eval_dataset is not None
        self.rows = 0
        self.last_step: int | None = None
        self.max_steps = 0
        self.stride = 1
        # The newest training completion when the last step ended: what an evaluation adds comes after it.
        self.train_tail: Any = None

    def on_train_begin(self, args: "TrainingArguments", state: "TrainerState", control: "TrainerControl",
                       **kwargs: Any) -> None:
        self.max_steps = state.max_steps
        points = MAX_ROWS // SAMPLES_PER_RECORD
        self.stride = max(1, math.ceil(state.max_steps / (points - 1)))
        if state.is_world_process_zero:
            self._keep_rows_until(state.global_step)

    def on_step_end(self, args: "TrainingArguments", state: "TrainerState", control: "TrainerControl",
                    **kwargs: Any) -> None:
        completions = self._logs()["completion"]
        self.train_tail = completions[-1] if completions else None

    def on_log(self, args: "TrainingArguments", state: "TrainerState", control: "TrainerControl",
               logs: dict[str, float] | None = None, **kwargs: Any) -> None:
        if not self.evaluates and logs is not None and "loss" in logs:
            self._record(state, "train", start=0)

    def on_evaluate(self, args: "TrainingArguments", state: "TrainerState", control: "TrainerControl",
                    **kwargs: Any) -> None:
        completions = self._logs()["completion"]
        # The kept batch holds the evaluation's completions after the last training ones (all of it when the
        # evaluation wrote a batch or more).
        after_train = next((i + 1 for i, completion in enumerate(completions) if completion is self.train_tail), 0)
        self._record(state, "eval", start=after_train)

    def on_train_end(self, args: "TrainingArguments", state: "TrainerState", control: "TrainerControl",
                     **kwargs: Any) -> None:
        # The last step (of a canceled run too) is not always a logging step; an evaluating run evaluates it after
        # training.
        if not self.evaluates:
            self._record(state, "train", start=0, last=True)

    def _logs(self) -> dict[str, Any]:
        logs: dict[str, Any] = self.trainer._logs
        return logs

    def _due(self, step: int, last: bool) -> bool:
        if self.last_step is None:
            return True
        return step != self.last_step and (last or step >= self.max_steps or step - self.last_step >= self.stride)

    def _record(self, state: "TrainerState", split: str, start: int, last: bool = False) -> None:
        step = state.global_step
        if not state.is_world_process_zero or not self._due(step, last):
            return
        rows = self._rows(step, split, start)
        if not rows:
            return
        with self.path.open("a", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
        self.rows += len(rows)
        self.last_step = step

    def _rows(self, step: int, split: str, start: int) -> list[Record]:
        logs = self._logs()
        prompts: Sequence[Any] = list(logs["prompt"])[start:]
        count = min(SAMPLES_PER_RECORD, MAX_ROWS - self.rows, len(prompts))
        if count <= 0:
            return []
        completions = list(logs["completion"])[start:]
        advantages = list(logs["advantages"])[start:]
        names: list[str] = list(self.trainer.reward_func_names)
        weights: list[float] = self.trainer.reward_weights.tolist()
        rewards = {name: list(logs["rewards"][name])[start:] for name in names}
        rows = []
        # Spread over the batch: several prompts' groups where it holds several.
        for index in (i * len(prompts) // count for i in range(count)):
            values = {name: float(rewards[name][index]) for name in names}
            weighted = [weight * values[name] for name, weight in zip(names, weights, strict=True)
                        if not math.isnan(values[name])]
            prompt = message_text(prompts[index])
            rows.append({
                "step": step,
                "split": split,
                "prompt": prompt,
                "completion": message_text(completions[index]),
                "expected": self.answers.get(prompt),
                "rewards": {name: _finite(value) for name, value in values.items()},
                # As TRL sums a completion's reward: the weighted components it has.
                "reward": math.fsum(weighted) if weighted else None,
                "advantage": _finite(float(advantages[index])),
            })
        return rows

    def _keep_rows_until(self, step: int) -> None:
        """A resumed run keeps the rows of the steps it does not train again; a run from step 0 starts the file."""
        if not self.path.exists():
            return
        kept: list[Record] = []
        if step:
            with self.path.open(encoding="utf-8") as lines:
                kept = [row for row in map(json.loads, filter(str.strip, lines)) if row["step"] <= step]
        self.path.write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
        self.rows = len(kept)
        self.last_step = kept[-1]["step"] if kept else None
