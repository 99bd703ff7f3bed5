"""The bridge from the trainer's events to a RunSink: metrics, progress and cancellation."""

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from tunelab.training.checkpoints import CHECKPOINT_EXTRAS, CHECKPOINT_PREFIX
from tunelab.training.distributed import any_process, wait_for_every_process
from tunelab.training.sink import RunSink, perplexity

if TYPE_CHECKING:
    from tunelab.training.generation_eval import GenerationSettings, Question

logger = logging.getLogger("tunelab.training")

# Trainer log keys every objective's training log line has; each objective adds its own (ObjectiveSpec.metric_keys).
COMMON_TRAIN_KEYS = ("loss", "learning_rate", "grad_norm", "epoch")


class SinkCallback(TrainerCallback):
    """Forwards train/eval metrics and progress to the sink, and stops training once the sink asks to cancel."""

    def __init__(self, sink: RunSink, metric_keys: tuple[str, ...] = (), reports_perplexity: bool = True) -> None:
        self.sink = sink
        # Trainer log key -> Tunelab metric key ("rewards/margins" -> "train/rewards/margins").
        self.train_keys = {name: f"train/{name}" for name in (*COMMON_TRAIN_KEYS, *metric_keys)}
        self.eval_keys = {f"eval_{name}": f"eval/{name}" for name in metric_keys}
        self.reports_perplexity = reports_perplexity
        self.canceled = False
        self._step_started = 0.0
        self._seconds_since_log = 0.0  # time inside training steps only, so evaluations do not dilute throughput
        self._steps_since_log = 0
        self._tokens_at_last_log = 0.0
        # Over the logged steps of this attempt: what the run's throughput is measured on (evaluations excluded).
        self.train_tokens = 0.0
        self.train_step_seconds = 0.0
        self.train_steps = 0

    @property
    def tokens_per_second(self) -> float:
        """Training tokens over the time spent inside training steps."""
        return self.train_tokens / self.train_step_seconds if self.train_step_seconds > 0 else 0.0

    def continue_from(self, tokens_seen: int) -> None:
        """A resumed run had seen `tokens_seen` tokens: throughput counts only the tokens of this attempt's steps."""
        self._tokens_at_last_log = float(tokens_seen)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       **kwargs: Any) -> None:
        # The trainer evaluates the untrained model before step 1 (eval_on_start): minutes on a real model.
        self.sink.phase("evaluating" if args.eval_on_start else "training")

    def on_prediction_step(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                           **kwargs: Any) -> None:
        self.sink.phase("evaluating")

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                      **kwargs: Any) -> None:
        self.sink.phase("training")
        self._step_started = time.perf_counter()

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, float] | None = None, **kwargs: Any) -> None:
        logs = logs or {}
        values: dict[str, float] = {}
        if "loss" in logs:
            values.update({key: float(logs[name]) for name, key in self.train_keys.items() if name in logs})
            # TRL logs the running count of input tokens; their increase over the step time since the last log is
            # the throughput.
            num_tokens = float(logs.get("num_tokens", self._tokens_at_last_log))
            if self._seconds_since_log > 0:
                values["train/tokens_per_second"] = (num_tokens - self._tokens_at_last_log) / self._seconds_since_log
            if "num_tokens" in logs:
                values["train/tokens_seen"] = num_tokens  # the x axis "tokens seen" of the charts
            self.train_tokens += num_tokens - self._tokens_at_last_log
            self.train_step_seconds += self._seconds_since_log
            self.train_steps += self._steps_since_log
            self._seconds_since_log, self._steps_since_log, self._tokens_at_last_log = 0.0, 0, num_tokens
        if "eval_loss" in logs:
            eval_loss = float(logs["eval_loss"])
            values["eval/loss"] = eval_loss
            if self.reports_perplexity:
                values["eval/perplexity"] = perplexity(eval_loss)
            values.update({key: float(logs[name]) for name, key in self.eval_keys.items() if name in logs})
        if values:
            self.sink.log_metrics(state.global_step, values, time.time())
            logger.info("step %d: %s", state.global_step, ", ".join(f"{k}={v:.6g}" for k, v in values.items()))

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        self._seconds_since_log += time.perf_counter() - self._step_started
        self._steps_since_log += 1
        self.sink.progress(state.global_step, state.max_steps)
        # Only rank 0 hears a cancel (the others' sinks record nothing); every rank must stop at the same step, or the
        # ones still training wait forever on the others' gradients.
        if any_process(self.sink.should_cancel(), args.device):
            logger.info("cancel requested: stopping after step %d, saving a checkpoint", state.global_step)
            self.canceled = True
            # Stop now and keep this state to resume from; an evaluation due at this step would only delay the stop.
            control.should_training_stop = True
            control.should_save = True
            control.should_evaluate = False

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        # Each rank writes its own RNG state into the checkpoint after rank 0 wrote the rest: the checkpoint is
        # complete once all have.
        wait_for_every_process()
        self.sink.checkpoint_saved(state.global_step)


class TokensSeenRecorder(TrainerCallback):
    """Writes TRL's running count of training tokens into each checkpoint, which would otherwise not hold it."""

    def __init__(self) -> None:
        self.count: Callable[[], int] = lambda: 0

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        assert args.output_dir is not None, "TrainingArguments fills in a default"
        folder = Path(args.output_dir) / f"{CHECKPOINT_PREFIX}{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            (folder / CHECKPOINT_EXTRAS).write_text(json.dumps({"num_tokens": int(self.count())}), encoding="utf-8")


class GenerationEvalCallback(TrainerCallback):
    """At each eval, the trained model answers the generation eval rows; their scores are logged as eval/exact_match,
    eval/rouge_l and eval/bleu at that step. The answers of the last eval are kept: when it was the final step's, the
    run's closing evaluation scores them instead of generating them again."""

    def __init__(self, sink: RunSink, tokenizer: Any, questions: list["Question"],
                 settings: "GenerationSettings") -> None:
        self.sink, self.tokenizer, self.questions, self.settings = sink, tokenizer, questions, settings
        self.last_answers: tuple[int, list[str | None]] | None = None

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        from tunelab.training.generation_eval import GenerationBudget, answer, scores_of

        model = kwargs.get("model")
        if model is None or not state.is_world_process_zero:
            return
        answers = answer(model, self.tokenizer, self.questions, self.settings.max_new_tokens,
                         GenerationBudget(self.settings.time_budget_s))
        self.last_answers = (state.global_step, answers)
        scores = scores_of(answers, self.questions)
        if scores is not None:
            self.sink.log_metrics(state.global_step, scores.as_metrics(), time.time())
            logger.info("step %d: generation eval over %d rows: exact match %.3f, ROUGE-L %.3f, BLEU %.2f",
                        state.global_step, scores.rows, scores.exact_match, scores.rouge_l, scores.bleu)

    def answers_at(self, step: int) -> list[str | None] | None:
        """The answers of the eval at `step`, when the last eval was that one."""
        return self.last_answers[1] if self.last_answers is not None and self.last_answers[0] == step else None
