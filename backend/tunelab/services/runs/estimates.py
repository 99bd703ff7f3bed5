"""What a run would need before it is launched: memory per device (from the model's exact parameter counts and the
activations of its longest batch) against the devices of its queue's workers, the process's resident peak, and time
from the throughput of earlier runs of the same model and method."""

import logging
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.models import Dataset, Run, RunStatus
from tunelab.schemas.devices import DevicePublic
from tunelab.schemas.estimates import (
    EstimateCreate,
    EstimatePublic,
    MemoryBreakdown,
    ProcessPeakEstimate,
    QueueDevice,
    StrategyTotal,
    TimeEstimate,
)
from tunelab.services.catalog import datasets
from tunelab.services.catalog.models import model_param_defaults, resolve_model_path
from tunelab.services.runs.runs import (
    TrainingChoice,
    check_params_fit_model,
    resolve_training_choice,
    training_config,
    workers,
)
from tunelab.training import estimator, registry
from tunelab.training.devices import Device
from tunelab.training.params import TrainingParams

log = logging.getLogger(__name__)
# Throughput of the most recent runs only: an old figure may come from other hardware or library versions.
THROUGHPUT_RUNS = 20


def estimate_run(session: Session, settings: Settings, body: EstimateCreate, project_ids: list[int]) -> EstimatePublic:
    """The estimate of a run as POST /runs would launch it; throughput is read from the runs of `project_ids`."""
    queue = body.queue or settings.default_queue
    choice = resolve_training_choice(body.objective, body.method, body.params, queue,
                                     model_param_defaults(settings, body.model, body.method))
    model_path = resolve_model_path(settings, body.model)
    check_params_fit_model(choice, model_path)
    params = registry.params_model(choice.objective.name, choice.method.name).model_validate(choice.params)
    num_processes = body.num_processes or params.num_processes
    zero_stage = body.zero_stage if body.zero_stage is not None else params.zero_stage
    dataset = _dataset(session, body.dataset, project_ids)
    lengths = _sequence_lengths(settings, dataset, model_path)
    try:
        memory, sequence_length_basis = memory_of(model_path, choice.objective, choice.method, params, lengths,
                                                  num_processes)
    except (OSError, ValueError) as exc:  # a config transformers cannot read, or an architecture it cannot build
        raise AppError("VALIDATION_ERROR", f"model: cannot read the model's config to estimate it: {exc}",
                       [{"field": "model", "message": "config not readable"}]) from None
    total = memory["per_device_bytes"][zero_stage]
    devices = _queue_devices(queue, total)
    fits = any(d.fits for d in devices) if devices else None
    return EstimatePublic(
        model=body.model, objective=choice.objective.name, method=choice.method.name, queue=queue,
        num_processes=num_processes, zero_stage=zero_stage,
        total_params=memory["total_params"], trainable_params=memory["trainable_params"],
        gradient_checkpointing=params.gradient_checkpointing,
        memory=MemoryBreakdown(
            weights_bytes=memory["weights_bytes"], reference_weights_bytes=memory["reference_weights_bytes"],
            reward_model_weights_bytes=memory["reward_model_weights_bytes"],
            gradients_bytes=memory["gradients_bytes"],
            optimizer_states_bytes=memory["optimizer_states_bytes"], activations_bytes=memory["activations_bytes"],
            activations_with_checkpointing_bytes=memory["activations_with_checkpointing_bytes"],
            activations_without_checkpointing_bytes=memory["activations_without_checkpointing_bytes"],
            activations_traced=memory["activations_traced"],
            backward_temporaries_bytes=memory["backward_temporaries_bytes"],
            generation_kv_cache_bytes=memory["generation_kv_cache_bytes"],
            sequence_length=memory["sequence_length"],
            sequence_length_basis=sequence_length_basis,
        ),
        per_device=[StrategyTotal(zero_stage=stage, total_bytes=size) for stage, size in memory["per_device_bytes"].items()],
        total_per_device_bytes=total,
        devices=devices,
        fits=fits,
        warning=_memory_warning(queue, total, devices, params.gradient_checkpointing),
        process_peak=_process_peak(session, settings, body.model, choice.method.name, queue, total, project_ids),
        time=_time_estimate(session, body, dataset, lengths, choice, params, num_processes, project_ids),
    )


def training_devices(devices: list[Device]) -> list[Device]:
    """The devices a worker's training processes use: its GPUs when it has any, else its CPU."""
    cuda = [d for d in devices if d["kind"] == "cuda"]
    return cuda or [d for d in devices if d["kind"] == "cpu"]


def _queue_devices(queue: str, total_per_device: int) -> list[QueueDevice]:
    try:
        present = [w for w in workers.list_workers() if queue in w["queues"]]
    except RedisError:
        log.warning("could not read the workers of queue %r for an estimate", queue, exc_info=True)
        return []
    return [
        QueueDevice(worker=w["name"], device=DevicePublic.model_validate(device),
                    fits=total_per_device <= device["memory_bytes"])
        for w in present for device in training_devices(w.get("devices", []))
    ]


def _memory_warning(queue: str, total: int, devices: list[QueueDevice], checkpointing: bool) -> str | None:
    if not devices or any(d.fits for d in devices):
        return None
    largest = max(devices, key=lambda d: d.device.memory_bytes).device
    hint = "" if checkpointing else "; gradient checkpointing, a smaller batch or max_length would lower it"
    return (f"needs about {_gib(total)} per device, more than the {_gib(largest.memory_bytes)} of the largest "
            f"{largest.kind} device of queue {queue!r} ({largest.name}){hint}")


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def memory_of(model_path: Path, objective: registry.ObjectiveSpec, method: registry.MethodSpec,
              params: TrainingParams, lengths: Sequence[int] | None,
              num_processes: int) -> tuple[estimator.MemoryEstimate, Literal["dataset", "max_length"]]:
    """The memory of the run, counted at the longest batch the dataset's rows (their token `lengths`, when known) can
    make, and what decided that length: the dataset, or max_length."""
    sequence_length = estimator.sequence_length_for_memory(lengths, params, objective)
    longest_batch = params.model_copy(update={"max_length": sequence_length})
    basis: Literal["dataset", "max_length"] = (
        "dataset" if lengths and sequence_length != params.max_length else "max_length")
    return estimator.estimate_memory(str(model_path), method, longest_batch, num_processes, objective), basis


def _process_peak(session: Session, settings: Settings, model: str, method: str, queue: str, total_per_device: int,
                  project_ids: list[int]) -> ProcessPeakEstimate:
    details = session.scalars(
        select(Run.summary_details)
        .where(Run.project_id.in_(project_ids), Run.queue == queue, Run.status == RunStatus.succeeded,
               Run.external.is_(False))
        .order_by(Run.finished_at.desc()).limit(THROUGHPUT_RUNS))
    measured = [d["runtime_rss_bytes"] for d in details if d and d.get("runtime_rss_bytes")]
    if not measured:
        return ProcessPeakEstimate(bytes=None, runtime_bytes=None, based_on_runs=0,
                                   reason=f"no earlier succeeded run on queue {queue!r} measured the runtime's memory")
    runtime = int(statistics.median(measured))
    factors = _allocator_factors(session, settings, model, method, queue, project_ids)
    factor = estimator.allocator_factor(factors)
    return ProcessPeakEstimate(bytes=runtime + round(total_per_device * factor), runtime_bytes=runtime,
                               based_on_runs=len(measured), allocator_factor=factor,
                               allocator_based_on_runs=len(factors))


def _allocator_factors(session: Session, settings: Settings, model: str, method: str, queue: str,
                       project_ids: list[int]) -> list[float]:
    """How much more resident memory each recent CPU run of this model and method held than its own estimate: its peak
    RSS less its runtime's, over its total per device estimated again now. The C allocator keeps freed pages and
    serves the next step from them: a LoRA run of SmolLM2 held 1.5× its tensors, a full one 1.07×."""
    runs = session.scalars(
        select(Run)
        .where(Run.project_id.in_(project_ids), Run.queue == queue, Run.model == model, Run.method == method,
               Run.status == RunStatus.succeeded, Run.external.is_(False))
        .order_by(Run.finished_at.desc()).limit(THROUGHPUT_RUNS))
    factors: list[float] = []
    for run in runs:
        details = run.summary_details or {}
        peak, runtime = details.get("process_peak_rss_bytes"), details.get("runtime_rss_bytes")
        # On a GPU the activations are in device memory: the process's RSS says nothing of them.
        if not peak or not runtime or details.get("cuda_peak_memory_bytes"):
            continue
        estimated = _estimated_total(session, settings, run)
        if estimated:
            factors.append((peak - runtime) / estimated)
        if len(factors) == estimator.ALLOCATOR_RUNS:
            break
    return factors


def _estimated_total(session: Session, settings: Settings, run: Run) -> int | None:
    """The total per device that the estimate gives `run` now, from its recorded config; None when it cannot be
    recomputed (its model is gone, or its params no longer validate)."""
    config = training_config(run)
    try:
        objective, method = registry.get_objective(run.objective), registry.get_method(run.method)
        params = registry.params_model(run.objective, run.method).model_validate(config["params"])
        model_path = resolve_model_path(settings, run.model)
        dataset = session.get(Dataset, config["dataset"]["id"])
        lengths = _sequence_lengths(settings, dataset, model_path)
        memory, _ = memory_of(model_path, objective, method, params, lengths, params.num_processes)
    except (AppError, ValidationError, KeyError, OSError, ValueError):
        return None
    return memory["per_device_bytes"][params.zero_stage]


def _dataset(session: Session, dataset_id: int | None, project_ids: list[int]) -> Dataset | None:
    if dataset_id is None:
        return None
    dataset = session.get(Dataset, dataset_id)
    if dataset is None or not (dataset.bundled or dataset.project_id in project_ids):
        raise AppError("DATASET_NOT_FOUND", f"dataset: dataset {dataset_id} does not exist", {"field": "dataset"})
    return dataset


def _sequence_lengths(settings: Settings, dataset: Dataset | None, model_path: Path) -> Sequence[int] | None:
    """The token length of every sequence of the dataset with the model's tokenizer; None without a dataset or when
    the model has no tokenizer it can go through."""
    if dataset is None:
        return None
    try:
        return datasets.sequence_token_lengths(settings, dataset, model_path)
    except AppError:
        return None


def _time_estimate(session: Session, body: EstimateCreate, dataset: Dataset | None, lengths: Sequence[int] | None,
                   choice: TrainingChoice, params: TrainingParams, num_processes: int,
                   project_ids: list[int]) -> TimeEstimate:
    tokens, basis, tokens_per_step = _tokens_to_train(dataset, lengths, choice, params, num_processes)
    earlier = session.execute(
        select(Run.tokens_per_second, Run.summary_details)
        .where(Run.project_id.in_(project_ids), Run.model == body.model, Run.method == body.method,
               Run.status == RunStatus.succeeded, Run.tokens_per_second > 0)
        .order_by(Run.finished_at.desc()).limit(THROUGHPUT_RUNS)).all()
    throughputs = [rate for rate, _ in earlier if rate is not None]
    if tokens is None:
        return TimeEstimate(tokens=None, tokens_per_second=None, based_on_runs=len(throughputs), seconds=None,
                            reason="the run trains for epochs: choose its dataset, or set max_steps")
    timed = [step for step in (_timed_step(details) for _, details in earlier) if step is not None]
    cost = estimator.fit_step_cost(timed, throughputs)
    if cost is None:
        return TimeEstimate(tokens=tokens, tokens_basis=basis, tokens_per_second=None, based_on_runs=0, seconds=None,
                            reason=f"no earlier succeeded run of {body.method} on {body.model} to measure throughput")
    return TimeEstimate(tokens=tokens, tokens_basis=basis, tokens_per_second=1 / cost.seconds_per_token,
                        seconds_per_step_fixed=cost.fixed_seconds, based_on_runs=len(throughputs),
                        seconds=cost.seconds(tokens / tokens_per_step, tokens))


def _timed_step(details: dict[str, Any] | None) -> tuple[float, float] | None:
    """(tokens per step, seconds per step) of an earlier run's timed steps; None for a run from before they were
    recorded."""
    if not details or not details.get("train_steps_timed"):
        return None
    steps = details["train_steps_timed"]
    return details["train_tokens_timed"] / steps, details["train_seconds_timed"] / steps


def _tokens_to_train(dataset: Dataset | None, lengths: Sequence[int] | None, choice: TrainingChoice,
                     params: TrainingParams,
                     num_processes: int) -> tuple[int | None, Literal["dataset", "max_length"], float]:
    """The training tokens of the run and its tokens per step: from the dataset's real token lengths with the model's
    tokenizer when the dataset is chosen (the throughput it is divided by was measured on real tokens too), else
    every example at max_length, an upper bound (it made a run of short rows look 6–8× longer than it took)."""
    examples_per_step = estimator.examples_per_step(params, num_processes)
    examples_per_row = choice.objective.examples_of_row(dataset.format, params) if dataset is not None else 1
    if dataset is None or lengths is None:  # without a tokenizer the dataset can go through, the bound still holds
        bound = estimator.tokens_per_example([], params, choice.objective)
        tokens = estimator.tokens_to_train(params, num_processes, None if dataset is None else dataset.row_count,
                                           bound, examples_per_row)
        return tokens, "max_length", examples_per_step * bound
    per_example = estimator.tokens_per_example(lengths, params, choice.objective)
    return (estimator.tokens_to_train(params, num_processes, dataset.row_count, per_example, examples_per_row),
            "dataset", examples_per_step * per_example)
