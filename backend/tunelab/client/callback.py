"""TunelabCallback: log a transformers `Trainer` (so every TRL trainer) run trained anywhere to Tunelab.

    trainer = SFTTrainer(..., callbacks=[TunelabCallback(project="llama-sft")])
    trainer.train()

The run is created at train begin with the resolved TrainingArguments as its config, gets the trainer's logs under
the keys Tunelab's own runs use (train/loss, train/learning_rate, train/grad_norm, train/epoch, eval/<metric>,
train/tokens_seen, train/tokens_per_second or train/samples_per_second), and ends `succeeded` at train end. A
callback does not see an exception in `train()`: the run then ends `failed` with it at interpreter exit (an uncaught
exception), or say so yourself with `callback.fail(reason)`, or `with callback: trainer.train()`.
"""

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from tunelab.client.run import Run, exception_reason, init

# Trainer log keys -> Tunelab keys where the plain "train/<key>" would mislead.
RENAMED_KEYS = {
    "num_tokens": "train/tokens_seen",  # TRL's running count of training tokens
    "num_input_tokens_seen": "train/tokens_seen",  # Trainer's, with include_num_input_tokens_seen
    "train_loss": "train/mean_loss",  # the average over the whole run, logged once at the end
    "train_runtime": "train/runtime_s",
    "train_samples_per_second": "train/samples_per_second",
    "train_steps_per_second": "train/steps_per_second",
    "total_flos": "train/total_flos",
}


def tunelab_key(trainer_key: str) -> str:
    """The Tunelab metric key of one Trainer log key: eval_loss -> eval/loss, loss -> train/loss."""
    if trainer_key in RENAMED_KEYS:
        return RENAMED_KEYS[trainer_key]
    if trainer_key.startswith("eval_"):
        return "eval/" + trainer_key.removeprefix("eval_")
    return "train/" + trainer_key


def _model_name(model: Any) -> str | None:
    config = getattr(model, "config", None)
    return getattr(model, "name_or_path", None) or getattr(config, "_name_or_path", None) or None


def _method(model: Any) -> str:
    """The PEFT method of a PEFT model (lora, ia3 …), else full fine-tuning."""
    peft_config = getattr(model, "peft_config", None)
    if isinstance(peft_config, Mapping) and peft_config:
        peft_type = getattr(next(iter(peft_config.values())), "peft_type", None)
        if peft_type is not None:
            return str(getattr(peft_type, "value", peft_type)).lower()
    return "full"


class TunelabCallback(TrainerCallback):
    """Creates a Tunelab run when training begins, logs every trainer log line to it, finishes it at train end.

    project/name/url/token/config are tunelab.init's (config adds to the TrainingArguments); `run` logs into a run
    you created yourself instead. With finish_on_train_end=False the run stays open (for a trainer.evaluate()
    afterwards, say) until run.finish() or the interpreter's exit.
    """

    def __init__(self, project: int | str | None = None, name: str | None = None, url: str | None = None,
                 token: str | None = None, config: Mapping[str, Any] | None = None, run: Run | None = None,
                 finish_on_train_end: bool = True) -> None:
        self.project, self.name, self.url, self.token = project, name, url, token
        self.config = dict(config or {})
        self.run = run
        self.finish_on_train_end = finish_on_train_end
        self._step_started = 0.0
        self._step_seconds = 0.0  # inside training steps since the last log: evaluations do not dilute throughput
        self._steps_at_last_log = 0
        self._tokens_at_last_log = 0.0

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.run is not None:
            return
        config = {**args.to_dict(), **self.config}  # to_dict masks the hub token
        self.run = init(project=self.project, name=self.name or _run_name(args), config=config, url=self.url,
                        token=self.token, model=_model_name(model), method=_method(model))
        self._steps_at_last_log = state.global_step

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                      **kwargs: Any) -> None:
        self._step_started = time.perf_counter()

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        self._step_seconds += time.perf_counter() - self._step_started

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.run is None or not state.is_world_process_zero or not logs:
            return
        values = {tunelab_key(key): value for key, value in logs.items() if key != "step"}
        if "loss" in logs and self._step_seconds > 0:
            values.update(self._throughput(args, state, logs))
        self.run.log(values, step=state.global_step)

    def _throughput(self, args: TrainingArguments, state: TrainerState, logs: Mapping[str, Any]) -> dict[str, float]:
        """Tokens/s when the trainer counts tokens (TRL does), else samples/s, over the step time since the last log."""
        seconds, self._step_seconds = self._step_seconds, 0.0
        steps, self._steps_at_last_log = state.global_step - self._steps_at_last_log, state.global_step
        tokens = logs.get("num_tokens", logs.get("num_input_tokens_seen"))
        if isinstance(tokens, int | float):
            previous, self._tokens_at_last_log = self._tokens_at_last_log, float(tokens)
            return {"train/tokens_per_second": (float(tokens) - previous) / seconds}
        samples = steps * args.train_batch_size * args.gradient_accumulation_steps * args.world_size
        return {"train/samples_per_second": samples / seconds}

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: Any) -> None:
        if self.run is not None and self.finish_on_train_end:
            self.run.finish()

    def fail(self, reason: str) -> None:
        """End the run `failed` with `reason` (what the callback cannot see: train() raised)."""
        if self.run is not None:
            self.run.finish(failed=reason)

    def __enter__(self) -> "TunelabCallback":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if error is not None:
            self.fail(exception_reason(error))
        elif self.run is not None:
            self.run.finish()


def _run_name(args: TrainingArguments) -> str | None:
    # TrainingArguments defaults run_name to output_dir (or None in newer versions): only a name someone chose.
    name = getattr(args, "run_name", None)
    return name if name and name != args.output_dir else None
