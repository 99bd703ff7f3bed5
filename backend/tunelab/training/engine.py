"""Run one training job with TRL, reporting to a RunSink and writing the run's artifacts.

Artifacts under job.output_dir:
  adapter/ (PEFT methods, PeftModel.save_pretrained) or model/ (full, HF format)
  tokenizer/          the tokenizer trained with (chat template included)
  config.json         the resolved run config: objective, method, model, dataset, params, library versions
  trainer_log.jsonl   the trainer's log history, one entry per line
  checkpoints/checkpoint-<step>/  the trainer's checkpoints (model or adapter, optimizer, scheduler, RNG, trainer
                      state with the data position), the newest `checkpoints_to_keep`; a resume starts from the newest
  samples.jsonl       up to 3 eval prompts: prompt, prompt_token_ids, expected, completion (greedy),
                      base_completion (the base model's, greedy), logits (first 16 of the prompt's last position,
                      float32, trained model in eval mode)
  predictions.jsonl   evaluation by generation: per eval row (the first generation_eval_rows), prompt, expected,
                      tuned and base answers (greedy) and each one's exact match, ROUGE-L and BLEU
  rl_samples.jsonl    online RL (GRPO, RLOO): up to 4 of the completions the policy sampled at each eval (at logging
                      steps without an eval split), at most 200 rows: step, split, prompt, completion, expected,
                      rewards (each component's value), reward (their weighted sum), advantage
"""

import json
import logging
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tunelab.training.adapters import initialised_from_the_base
from tunelab.training.checkpoints import CHECKPOINTS_DIR, checkpoint_tokens_seen, latest_checkpoint
from tunelab.training.distributed import any_process, is_main_process
from tunelab.training.generation_eval import (
    GENERATION_EVAL_TIME_BUDGET_S,
    SAMPLE_COUNT,
    SAMPLE_NEW_TOKENS,
    SAMPLE_TIME_BUDGET_S,
    BaselineCache,
    GenerationSettings,
    evaluate_by_generation,
    questions_of,
    write_samples,
)
from tunelab.training.registry import (
    MethodSpec,
    ObjectiveSpec,
    Record,
    TrainerInputs,
    get_method,
    get_objective,
    params_model,
)
from tunelab.training.sink import RunSink, RunSummary, TrainingJob, TrainingResult, perplexity
from tunelab.training.truncation import count_truncation

if TYPE_CHECKING:
    from peft import PeftModelForCausalLM
    from torch import nn
    from transformers import PreTrainedTokenizerBase, Trainer

    from tunelab.training.memory import ModelStateBytes
    from tunelab.training.models import CausalLM

    # What a run trains: the base model, wrapped by PEFT for a PEFT method (every one has the causal-LM task type).
    TrainedModel = CausalLM | PeftModelForCausalLM

logger = logging.getLogger("tunelab.training")



def read_jsonl(path: Path) -> list[Record]:
    with Path(path).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


# How split_records picks the eval rows, in the run's config.json: enough to pick the same rows without this code.
EVAL_SPLIT_RULE = ("n = rows after conversion, in file order; if eval_split > 0 and n >= 2: k = min(n - 1, max(1, "
                   "round(n * eval_split))) and the eval rows are the indices random.Random(split_seed).sample("
                   "range(n), k) (Python's random), both splits kept in file order")


def split_records(records: list[Record], eval_fraction: float, seed: int) -> tuple[list[Record], list[Record]]:
    """(train, eval): a seeded random `eval_fraction` of the records held out (at least one), both in file order
    (EVAL_SPLIT_RULE says the same for a reader of the run's config)."""
    if eval_fraction <= 0 or len(records) < 2:
        return records, []
    eval_count = min(len(records) - 1, max(1, round(len(records) * eval_fraction)))
    eval_indices = set(random.Random(seed).sample(range(len(records)), eval_count))
    train = [record for i, record in enumerate(records) if i not in eval_indices]
    held_out = [record for i, record in enumerate(records) if i in eval_indices]
    return train, held_out


def count_parameters(model: "nn.Module") -> tuple[int, int]:
    """(trainable, total); PEFT's own count includes virtual-token embeddings of prompt-learning methods."""
    peft_count = getattr(model, "get_nb_trainable_parameters", None)
    if peft_count is not None:
        trainable, total = peft_count()
        return int(trainable), int(total)
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, total


def memory_summary(model_state: "ModelStateBytes") -> RunSummary:
    """The model state's bytes (what tells methods apart on any device), CUDA's max allocated on a GPU, and the
    process's peak RSS apart. peak_memory_bytes, what runs are compared by, is the CUDA peak on a GPU and the model
    state elsewhere (RSS on CPU is mostly the interpreter and its libraries, whatever the method)."""
    from tunelab.training.memory import cuda_max_allocated_bytes, process_peak_rss_bytes

    cuda_peak = cuda_max_allocated_bytes()
    summary: RunSummary = {
        "model_state_bytes": model_state["total"],
        "model_state_weights_bytes": model_state["weights"],
        "model_state_gradients_bytes": model_state["gradients"],
        "model_state_optimizer_states_bytes": model_state["optimizer_states"],
        "process_peak_rss_bytes": process_peak_rss_bytes(),
        "peak_memory_bytes": cuda_peak if cuda_peak is not None else model_state["total"],
    }
    if cuda_peak is not None:
        summary["cuda_peak_memory_bytes"] = cuda_peak
    return summary


def library_versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "trl": trl.__version__,
    }


def check_job(job: TrainingJob, objective: ObjectiveSpec, method: MethodSpec) -> None:
    """Raise a ValueError naming the mismatch when the objective cannot take this method or dataset format."""
    if not method.supports(objective.name):
        raise ValueError(f"method {method.name!r} does not support objective {objective.name!r}")
    if job.dataset_format not in objective.dataset_formats:
        raise ValueError(
            f"the {job.objective!r} objective takes {', '.join(objective.dataset_formats)} datasets, "
            f"not {job.dataset_format!r}"
        )


def truncation_summary(objective: ObjectiveSpec, records: list[Record], tokenizer: "PreTrainedTokenizerBase",
                       max_length: int) -> RunSummary:
    """How many rows the trainer cuts at max_length and how many tokens it drops (in the log too); nothing for an
    objective that cuts nothing."""
    if objective.sequence_lengths is None:
        return {}
    counted = count_truncation(objective.sequence_lengths(records, tokenizer), max_length)
    (logger.warning if counted.truncated_rows else logger.info)("%s", counted.describe(max_length))
    return {"tokenized_rows": counted.rows, "truncated_rows": counted.truncated_rows,
            "truncated_tokens": counted.truncated_tokens}


def preload() -> None:
    """Import what every run needs (torch, transformers, TRL, PEFT, datasets): a warm training process does it before
    its run is known (worker.supervisor). Nothing here touches a device, so a CUDA context is still made fresh by
    the run itself."""
    # transformers and TRL load a module at its first use: the names each objective takes are imported here.
    import datasets  # noqa: F401
    import torch  # noqa: F401
    from peft import PeftModel, get_peft_model  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer  # noqa: F401
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer  # noqa: F401

    from tunelab.training import callbacks, memory, models, system_metrics  # noqa: F401


def run_training(job: TrainingJob, sink: RunSink) -> TrainingResult:
    """Train `job` to completion or cancellation; write artifacts and report to `sink`. Errors propagate."""
    try:
        return _run(job, sink)
    finally:
        sink.flush()


def _run(job: TrainingJob, sink: RunSink) -> TrainingResult:
    import torch
    from transformers import PrinterCallback, set_seed

    from tunelab.training.callbacks import GenerationEvalCallback, SinkCallback, TokensSeenRecorder
    from tunelab.training.memory import ModelStateRecorder, model_state_bytes, process_rss_bytes
    from tunelab.training.models import load_starting_model
    from tunelab.training.system_metrics import SystemMetricsRecorder

    started = time.perf_counter()
    # What the process holds before any model or data (interpreter, torch, transformers, TRL): the share of its peak
    # that no method changes, which the estimate of a CPU run's peak takes from earlier runs.
    preload()
    runtime_rss = process_rss_bytes()
    objective, method = get_objective(job.objective), get_method(job.method)
    check_job(job, objective, method)
    params = params_model(objective.name, method.name).model_validate(job.params)
    output_dir = Path(job.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()

    sink.phase("loading_data")
    records = objective.convert_rows(read_jsonl(job.dataset_path), job.dataset_format)
    # The dataset's split seed, not the training seed: runs of one dataset with any seed evaluate on the same rows.
    split_seed = job.split_seed if job.split_seed is not None else params.seed
    train_records, eval_records = split_records(records, params.eval_split, split_seed)
    model_name, dataset_name = job.model_name or job.model, job.dataset_name or job.dataset_path.name
    if not train_records:
        raise ValueError(f"dataset {dataset_name} has no rows to train on")
    run_config = {
        "objective": job.objective,
        "method": job.method,
        "model": model_name,
        "dataset": dataset_name,
        "dataset_format": job.dataset_format,
        "train_examples": len(train_records),
        "eval_examples": len(eval_records),
        "split_seed": split_seed,
        "start_from": [{"kind": weights.kind, "run": weights.source} for weights in job.start_from],
        **({"reward_model": job.reward_model.source} if job.reward_model is not None else {}),
        "params": params.model_dump(mode="json"),
        "versions": library_versions(),
    }
    # Every process of a multi-process run trains; rank 0 alone writes the run's files.
    main_process = is_main_process()
    if main_process:
        (output_dir / "config.json").write_text(json.dumps(run_config, indent=2), encoding="utf-8")
    logger.info("training %s/%s on %s: %s", job.objective, job.method, model_name, run_config["params"])

    loading = method.model_loading(method, params)
    sink.phase("loading_model")
    # A reward model's score head is new: drawn from the run's seed, as TRL seeds before it loads one.
    set_seed(params.seed)
    model, tokenizer = load_starting_model(job.model, job.start_from, job.start_tokenizer_dir, loading,
                                           objective.model_head)
    if method.prepare_model is not None:
        method.prepare_model(model, params)  # freeze tuning freezes all but the layers it trains
    data_summary: RunSummary = {**truncation_summary(objective, records, tokenizer, params.max_length),
                                "runtime_rss_bytes": runtime_rss}
    sink.set_summary(data_summary)
    # Another rank saves a copy of its own aside (prompt tuning's text initialisation reads one as the trainer is
    # built), so that no rank reads a file rank 0 is writing.
    tokenizer_dir = output_dir / "tokenizer" if main_process else Path(tempfile.mkdtemp(prefix="tunelab-tokenizer-"))
    tokenizer.save_pretrained(tokenizer_dir)
    build_peft_config = method.build_peft_config  # there for PEFT methods only
    peft_config = build_peft_config(params, str(tokenizer_dir)) if build_peft_config is not None else None
    if peft_config is not None:
        # A reward model's adapter is a sequence classifier's: PEFT then trains (and saves) its score head too.
        peft_config.task_type = objective.peft_task_type
    checkpoint = latest_checkpoint(output_dir / CHECKPOINTS_DIR) if job.resume else None
    callback = SinkCallback(sink, objective.metric_keys, objective.reports_perplexity)
    generation = GenerationSettings(rows=params.generation_eval_rows, max_new_tokens=params.generation_max_new_tokens)
    # Under ZeRO-3 each rank holds a shard of the weights: rank 0 alone cannot generate. A reward model scores.
    generates = main_process and objective.generates and params.zero_stage < 3
    questions = questions_of(eval_records, tokenizer, generation.rows) if generates and generation.rows else []
    generation_callback = (GenerationEvalCallback(sink, tokenizer, questions, generation)
                           if questions and params.generation_eval_at_each_eval else None)
    tokens_recorder = TokensSeenRecorder()
    state_recorder = ModelStateRecorder()
    system_recorder = SystemMetricsRecorder(sink, job.system_metrics_interval_s)

    def load_base_model() -> "CausalLM":
        # What the run started from: a preference objective's reference, and the baseline of its generation eval.
        base, _ = load_starting_model(job.model, job.start_from, job.start_tokenizer_dir, loading,
                                      objective.model_head)
        return base

    def load_reward_model() -> "tuple[Any, PreTrainedTokenizerBase]":
        # The reward run's model, frozen: it scores completions and never trains.
        assert job.reward_model is not None
        scorer, scorer_tokenizer = load_starting_model(job.reward_model.base, job.reward_model.weights,
                                                       job.reward_model.tokenizer_dir, head="sequence_classification")
        scorer.eval().requires_grad_(False)
        return scorer, scorer_tokenizer

    trainer = objective.build_trainer(TrainerInputs(
        model=model, tokenizer=tokenizer, params=params, train_records=train_records, eval_records=eval_records,
        peft_config=peft_config, dataset_format=job.dataset_format, checkpoints_dir=output_dir / CHECKPOINTS_DIR,
        resuming=checkpoint is not None,
        callbacks=[tokens_recorder, callback, state_recorder, system_recorder,
                   *([generation_callback] if generation_callback is not None else [])],
        load_base_model=load_base_model,
        load_reward_model=load_reward_model if job.reward_model is not None else None,
        output_dir=output_dir,
    ))
    if not main_process:
        shutil.rmtree(tokenizer_dir, ignore_errors=True)
    if method.build_optimizer is not None:
        # The trainer makes its optimizer only when it has none (LoRA+'s has a learning rate per kind of weight).
        trainer.optimizer = method.build_optimizer(trainer, params)
    # TRL's trainers (SFT, DPO …) keep their running count of training tokens in _total_train_tokens; ORPO does not.
    token_counter = cast(Any, trainer)
    tokens_recorder.count = lambda: getattr(token_counter, "_total_train_tokens", 0)
    # With tqdm off the trainer prints every log dict to stdout; the callback already logs them through `logger`.
    trainer.remove_callback(PrinterCallback)
    # What the method costs is known before the first step: report it now, so it shows while the run trains.
    trainable, total = count_parameters(trained_model(trainer))
    sink.set_summary({"trainable_params": trainable, "total_params": total})
    if checkpoint is not None:
        # TRL counts training tokens in memory only; carry the count on, so "tokens seen" continues where it was.
        token_counter._total_train_tokens = checkpoint_tokens_seen(checkpoint)
        callback.continue_from(token_counter._total_train_tokens)
        logger.info("resuming from %s", checkpoint.name)
    # Canceled while the model was loading: nothing to train or save. Rank 0 hears it; all stop.
    if any_process(sink.should_cancel(), trainer.args.device):
        logger.info("canceled before the first step")
        return TrainingResult(canceled=True)
    # Before the first step (and before a resume loads its checkpoint), the adapter is still as it was initialised.
    initial_adapter = (save_initial_adapter(trained_model(trainer))
                       if main_process and initialised_from_the_base(peft_config) else None)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    history = trainer.state.log_history
    trained = trained_model(trainer)
    if main_process:
        run_config["resolved"] = resolved_training(trainer, objective)
        (output_dir / "config.json").write_text(json.dumps(run_config, indent=2), encoding="utf-8")
    if not callback.canceled:
        evaluated_last_step = any("eval_loss" in e and e.get("step") == trainer.state.global_step for e in history)
        if eval_records and not evaluated_last_step:
            sink.phase("evaluating")
            trainer.evaluate()
    sink.phase("saving")
    save_trained(trainer, output_dir / ("adapter" if method.peft else "model"), initial_adapter)
    if initial_adapter is not None:
        shutil.rmtree(initial_adapter.parent, ignore_errors=True)
    if main_process:
        with (output_dir / "trainer_log.jsonl").open("w", encoding="utf-8") as log_file:
            for entry in history:
                log_file.write(json.dumps(entry) + "\n")
    # A cancel means "stop now": no sample generation (on a real model it takes minutes).
    if generates and eval_records and not callback.canceled:
        sink.phase("generating")
        write_samples(trained, tokenizer, eval_records, output_dir / "samples.jsonl",
                      load_base_model)
    generation_summary: RunSummary = {}
    if questions and not callback.canceled:
        sink.phase("generating")
        final_step = trainer.state.global_step
        answered = generation_callback.answers_at(final_step) if generation_callback is not None else None
        evaluation = evaluate_by_generation(
            trained, tokenizer, questions, generation,
            model_identity=json.dumps({"model": job.model, "digest": job.model_digest, "loading": repr(loading),
                                       "start_from": [[w.kind, str(w.path)] for w in job.start_from]}),
            cache=BaselineCache(job.baseline_cache_dir), load_base_model=load_base_model,
            tuned=answered)
        evaluation.write_predictions(output_dir / "predictions.jsonl")
        generation_summary = evaluation.summary()
        if evaluation.tuned_scores is not None and answered is None:
            sink.log_metrics(final_step, evaluation.tuned_scores.as_metrics(), time.time())

    # After the last step the trainer has freed the gradients: the recorder counted them while they were there.
    model_state = state_recorder.peak or model_state_bytes(trained, trainer.optimizer)
    summary = run_summary(trained, history, callback.tokens_per_second, time.perf_counter() - started, model_state,
                          objective.reports_perplexity)
    if callback.train_steps:
        summary.update({"train_steps_timed": callback.train_steps, "train_tokens_timed": callback.train_tokens,
                        "train_seconds_timed": callback.train_step_seconds})
    summary.update(data_summary)
    summary.update(generation_summary)
    summary.update(preference_summary(history))
    sink.set_summary(summary)
    logger.info("%s: %s", "canceled" if callback.canceled else "finished", summary)
    return TrainingResult(canceled=callback.canceled, summary=summary)


def resolved_training(trainer: "Trainer", objective: ObjectiveSpec) -> dict[str, Any]:
    """What decided the run's numbers beyond its params, as the trainer resolved it: with the params and the split
    rule, an independent script reproduces the run from its config.json alone."""
    args = trainer.args
    optimizer = getattr(args.optim, "value", args.optim)
    return {
        "optimizer": str(optimizer),
        "adam_betas": [args.adam_beta1, args.adam_beta2],
        "adam_epsilon": args.adam_epsilon,
        "max_grad_norm": args.max_grad_norm,
        "total_steps": trainer.state.max_steps,
        "warmup_steps": args.get_warmup_steps(trainer.state.max_steps),
        "lr_scheduler": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
        "per_device_eval_batch_size": args.per_device_eval_batch_size,
        "eval_split_rule": EVAL_SPLIT_RULE,
        "eval_loss": objective.eval_loss,
        "sample_generation": {"greedy": True, "max_new_tokens": SAMPLE_NEW_TOKENS, "rows": SAMPLE_COUNT,
                              "time_budget_s": SAMPLE_TIME_BUDGET_S},
        "generation_eval": {"greedy": True, "rows": "the first generation_eval_rows eval rows with an expected answer",
                            "time_budget_s": GENERATION_EVAL_TIME_BUDGET_S,
                            "exact_match": "equal after case folding and collapsing whitespace",
                            "rouge_l": "mean ROUGE-L F1 (rouge-score, default tokenizer, no stemming)",
                            "bleu": "corpus BLEU (sacrebleu, 13a tokenization, 0-100)"},
    }


def preference_summary(history: list[dict[str, Any]]) -> RunSummary:
    """How well the run tells chosen from rejected at its last eval: a preference objective's reward accuracy and
    margin (TRL logs them for DPO and ORPO as rewards/…, for a reward model as accuracy and margin); nothing for
    other objectives."""
    for accuracy_key, margin_key in (("eval_rewards/accuracies", "eval_rewards/margins"),
                                     ("eval_accuracy", "eval_margin")):
        last = next((e for e in reversed(history) if accuracy_key in e), None)
        if last is None:
            continue
        summary: RunSummary = {"reward_accuracy": float(last[accuracy_key])}
        if margin_key in last:
            summary["reward_margin"] = float(last[margin_key])
        return summary
    return {}


def save_trained(trainer: "Trainer", folder: Path, initial_adapter: Path | None = None) -> None:
    """The trained model or adapter in Hugging Face format, written by rank 0. Under DeepSpeed ZeRO-3 each rank holds
    only a shard of the weights: the trainer gathers them (every rank takes part) and saves on rank 0. An adapter
    initialised from the base's weights (PiSSA, never under ZeRO-3) is saved as PEFT converts it with its
    `initial_adapter`: the plain LoRA of twice the rank that applies to the unchanged base."""
    if initial_adapter is not None:
        trained_model(trainer).save_pretrained(str(folder),
                                               path_initial_model_for_weight_conversion=str(initial_adapter))
    elif trainer.is_deepspeed_enabled:
        trainer.save_model(str(folder))
    elif is_main_process():
        trained_model(trainer).save_pretrained(str(folder))


def save_initial_adapter(model: "TrainedModel") -> Path:
    """The adapter as initialised, in a folder of its own (removed once the trained adapter is saved)."""
    folder = Path(tempfile.mkdtemp(prefix="tunelab-initial-adapter-")) / "initial"
    model.save_pretrained(str(folder))
    return folder


def trained_model(trainer: "Trainer") -> "TrainedModel":
    """The model the trainer holds: the one it was given, wrapped by PEFT for a PEFT method."""
    return cast("TrainedModel", trainer.model)


def run_summary(model: "nn.Module", history: list[dict[str, Any]], tokens_per_second: float,
                wall_time_s: float, model_state: "ModelStateBytes", reports_perplexity: bool = True) -> RunSummary:
    trainable, total = count_parameters(model)
    eval_losses = [e["eval_loss"] for e in history if "eval_loss" in e]
    summary: RunSummary = {
        "trainable_params": trainable,
        "total_params": total,
        "trainable_percent": 100.0 * trainable / total if total else 0.0,
        **memory_summary(model_state),
        "wall_time_s": wall_time_s,
        # Training tokens over the time inside training steps: evaluations and checkpoints do not dilute it.
        "tokens_per_second": tokens_per_second,
    }
    if eval_losses:
        summary["final_eval_loss"] = eval_losses[-1]
        summary["best_eval_loss"] = min(eval_losses)
        if reports_perplexity:
            summary["final_eval_perplexity"] = perplexity(eval_losses[-1])
    return summary
