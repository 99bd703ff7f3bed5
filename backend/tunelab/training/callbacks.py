"""The bridge from the trainer's events to a RunSink: metrics, progress and cancellation."""

import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from tunelab.training.checkpoints import CHECKPOINT_EXTRAS, CHECKPOINT_PREFIX
from tunelab.training.sink import RunSink

logger = logging.getLogger("tunelab.training")

# Trainer log key -> Tunelab metric key, for a training log line.
TRAIN_KEYS = {
    "loss": "train/loss",
    "learning_rate": "train/learning_rate",
    "grad_norm": "train/grad_norm",
    "epoch": "train/epoch",
    "mean_token_accuracy": "train/mean_token_accuracy",
}


class SinkCallback(TrainerCallback):
    """Forwards train/eval metrics and progress to the sink, and stops training once the sink asks to cancel."""

    def __init__(self, sink: RunSink) -> None:
        self.sink = sink
        self.canceled = False
        self._step_started = 0.0
        self._seconds_since_log = 0.0  # time inside training steps only, so evaluations do not dilute throughput
        self._tokens_at_last_log = 0.0

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                      **kwargs: Any) -> None:
        self._step_started = time.perf_counter()

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, float] | None = None, **kwargs: Any) -> None:
        logs = logs or {}
        values: dict[str, float] = {}
        if "loss" in logs:
            values.update({key: float(logs[name]) for name, key in TRAIN_KEYS.items() if name in logs})
            # TRL logs the running count of input tokens; their increase over the step time since the last log is
            # the throughput.
            num_tokens = float(logs.get("num_tokens", self._tokens_at_last_log))
            if self._seconds_since_log > 0:
                values["train/tokens_per_second"] = (num_tokens - self._tokens_at_last_log) / self._seconds_since_log
            if "num_tokens" in logs:
                values["train/tokens_seen"] = num_tokens  # the x axis "tokens seen" of the charts
            self._seconds_since_log, self._tokens_at_last_log = 0.0, num_tokens
        if "eval_loss" in logs:
            eval_loss = float(logs["eval_loss"])
            values["eval/loss"] = eval_loss
            values["eval/perplexity"] = math.exp(min(eval_loss, 700.0))  # exp overflows a float past ~709
            if "eval_mean_token_accuracy" in logs:
                values["eval/mean_token_accuracy"] = float(logs["eval_mean_token_accuracy"])
        if values:
            self.sink.log_metrics(state.global_step, values, time.time())
            logger.info("step %d: %s", state.global_step, ", ".join(f"{k}={v:.6g}" for k, v in values.items()))

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        self._seconds_since_log += time.perf_counter() - self._step_started
        self.sink.progress(state.global_step, state.max_steps)
        if self.sink.should_cancel():
            logger.info("cancel requested: stopping after step %d, saving a checkpoint", state.global_step)
            self.canceled = True
            # Stop now and keep this state to resume from; an evaluation due at this step would only delay the stop.
            control.should_training_stop = True
            control.should_save = True
            control.should_evaluate = False

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        self.sink.checkpoint_saved(state.global_step)


class TokensSeenRecorder(TrainerCallback):
    """Writes TRL's running count of training tokens into each checkpoint, which would otherwise not hold it."""

    def __init__(self) -> None:
        self.count: Callable[[], int] = lambda: 0

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        assert args.output_dir is not None, "TrainingArguments fills in a default"
        folder = Path(args.output_dir) / f"{CHECKPOINT_PREFIX}{state.global_step}"
        if folder.is_dir():
            (folder / CHECKPOINT_EXTRAS).write_text(json.dumps({"num_tokens": int(self.count())}), encoding="utf-8")
