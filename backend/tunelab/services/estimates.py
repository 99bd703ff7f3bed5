"""What a run would need before it is launched: memory per device (from the model's exact parameter counts) against
the devices of its queue's workers, and time from the throughput of earlier runs of the same model and method."""

import logging
import statistics
from pathlib import Path
from typing import Literal

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
from tunelab.services import datasets, workers
from tunelab.services.models import model_param_defaults, resolve_model_path
from tunelab.services.runs import TrainingChoice, check_params_fit_model, resolve_training_choice
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
    try:
        memory = estimator.estimate_memory(str(model_path), choice.method, params, num_processes, choice.objective)
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
            gradients_bytes=memory["gradients_bytes"],
            optimizer_states_bytes=memory["optimizer_states_bytes"], activations_bytes=memory["activations_bytes"],
            activations_with_checkpointing_bytes=memory["activations_with_checkpointing_bytes"],
            activations_without_checkpointing_bytes=memory["activations_without_checkpointing_bytes"],
            activations_traced=memory["activations_traced"],
            backward_temporaries_bytes=memory["backward_temporaries_bytes"],
        ),
        per_device=[StrategyTotal(zero_stage=stage, total_bytes=size) for stage, size in memory["per_device_bytes"].items()],
        total_per_device_bytes=total,
        devices=devices,
        fits=fits,
        warning=_memory_warning(queue, total, devices, params.gradient_checkpointing),
        process_peak=_process_peak(session, queue, total, project_ids),
        time=_time_estimate(session, settings, body, model_path, choice, params, num_processes, project_ids),
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


def _process_peak(session: Session, queue: str, total_per_device: int, project_ids: list[int]) -> ProcessPeakEstimate:
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
    return ProcessPeakEstimate(bytes=runtime + total_per_device, runtime_bytes=runtime, based_on_runs=len(measured))


def _time_estimate(session: Session, settings: Settings, body: EstimateCreate, model_path: Path,
                   choice: TrainingChoice, params: TrainingParams, num_processes: int,
                   project_ids: list[int]) -> TimeEstimate:
    dataset = None
    if body.dataset is not None:
        dataset = session.get(Dataset, body.dataset)
        if dataset is None or not (dataset.bundled or dataset.project_id in project_ids):
            raise AppError("DATASET_NOT_FOUND", f"dataset: dataset {body.dataset} does not exist", {"field": "dataset"})
    tokens, basis = _tokens_to_train(settings, dataset, model_path, choice, params, num_processes)
    throughputs: list[float] = [value for value in session.scalars(
        select(Run.tokens_per_second)
        .where(Run.project_id.in_(project_ids), Run.model == body.model, Run.method == body.method,
               Run.status == RunStatus.succeeded, Run.tokens_per_second > 0)
        .order_by(Run.finished_at.desc()).limit(THROUGHPUT_RUNS)
    ) if value is not None]
    if tokens is None:
        return TimeEstimate(tokens=None, tokens_per_second=None, based_on_runs=len(throughputs), seconds=None,
                            reason="the run trains for epochs: choose its dataset, or set max_steps")
    if not throughputs:
        return TimeEstimate(tokens=tokens, tokens_basis=basis, tokens_per_second=None, based_on_runs=0, seconds=None,
                            reason=f"no earlier succeeded run of {body.method} on {body.model} to measure throughput")
    median = statistics.median(throughputs)
    return TimeEstimate(tokens=tokens, tokens_basis=basis, tokens_per_second=median, based_on_runs=len(throughputs),
                        seconds=tokens / median)


def _tokens_to_train(settings: Settings, dataset: Dataset | None, model_path: Path, choice: TrainingChoice,
                     params: TrainingParams, num_processes: int) -> tuple[int | None, Literal["dataset", "max_length"]]:
    """The training tokens of the run: from the dataset's real token lengths with the model's tokenizer when the
    dataset is chosen (the throughput it is divided by was measured on real tokens too), else every example at
    max_length, an upper bound (it made a run of short rows look 6–8× longer than it took)."""
    if dataset is None:
        return estimator.tokens_to_train(params, num_processes, None), "max_length"
    try:
        lengths = datasets.sequence_token_lengths(settings, dataset, model_path)
    except AppError:  # a model without a tokenizer the dataset can go through: the bound still holds
        return estimator.tokens_to_train(params, num_processes, dataset.row_count), "max_length"
    per_example = estimator.tokens_per_example(lengths, params, choice.objective)
    return estimator.tokens_to_train(params, num_processes, dataset.row_count, per_example), "dataset"
