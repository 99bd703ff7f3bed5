"""Runs as people ask for them: launch, list, read, cancel (or force-stop), resume, clone, delete. What the
worker and the reaper do to a run is in services.runs.lifecycle; how it reaches a worker, in services.runs.queue."""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from pydantic import ValidationError
from sqlalchemy import Select, and_, func, or_, select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import Dataset, MetricSummary, Run, RunStatus, RunTag
from tunelab.db.models.run import FINISHED_STATUSES
from tunelab.schemas.common import MAX_ID
from tunelab.schemas.runs import (
    GenerationScoresPublic,
    RunClone,
    RunCreate,
    RunGenerationEvalPublic,
    RunLineagePublic,
    RunMemoryPublic,
    RunProgress,
    RunPublic,
    RunRefPublic,
    RunSortField,
    RunsPublic,
    RunTruncationPublic,
)
from tunelab.services import metrics
from tunelab.services.accounts import audit
from tunelab.services.accounts.principal import SYSTEM, Actor
from tunelab.services.catalog.models import model_param_defaults, resolve_model_path
from tunelab.services.live import events
from tunelab.services.paging import decode_offset, encode_offset
from tunelab.services.runs import exports, external_runs, queue, run_filters, run_queues, workers
from tunelab.services.runs.artifacts import has_folder, remove_run_files
from tunelab.services.runs.lifecycle import finish_run
from tunelab.services.runs.queue import Broker
from tunelab.services.runs.workers import WorkerPresence
from tunelab.training import model_fit, registry
from tunelab.training.sink import perplexity

log = logging.getLogger(__name__)
RESUMABLE_STATUSES = frozenset({RunStatus.failed, RunStatus.canceled})


class DatasetRef(TypedDict):
    """The dataset a run trains on, as it was at launch."""

    id: int
    name: str
    format: str
    content_hash: str
    rows: int
    split_seed: NotRequired[int]  # picks the eval split; absent from runs launched before datasets had one


class RunConfig(TypedDict):
    """The full resolved config of a run Tunelab trains (Run.config): what reproduces it."""

    objective: str
    method: str
    model: str  # as the launch named it
    model_path: str  # where the worker loads it from
    dataset: DatasetRef
    params: dict[str, Any]  # the method's params, every default filled in
    model_identity: NotRequired[dict[str, object]]  # recorded by the worker as it starts
    # A run that starts from another run's weights: that run, and every set of weights applied on top of the base in
    # order ({run_id, kind: adapter | model, name}); the worker finds each in its run's artifact folder.
    base_run: NotRequired[dict[str, Any]]
    start_from: NotRequired[list[dict[str, Any]]]
    # The reward run whose model scores an online RL run's completions ({run_id, name, weights: the weights applied on
    # its base in order, as start_from}); the worker reads its base from that run.
    reward_model: NotRequired[dict[str, Any]]


def training_config(run: Run) -> RunConfig:
    """The resolved config of a run that is not external (an external run's config holds only its params)."""
    return cast(RunConfig, run.config)


# Where the worker finds the base model on its disk: the worker's business, nobody's over HTTP (owners included: a
# path reproduces nothing on another server, where `model` and the identity's digest say which weights it was).
_WORKER_PATH_KEYS = ("model_path",)
_IDENTITY_PATH_KEYS = ("path", "hf_base_path")


def public_config(config: dict[str, Any]) -> dict[str, Any]:
    """A run's config as the API shows it: the model by its name and the dataset by its name, no server path."""
    public = {key: value for key, value in config.items() if key not in _WORKER_PATH_KEYS}
    identity = public.get("model_identity")
    if isinstance(identity, dict):
        public["model_identity"] = {k: v for k, v in identity.items() if k not in _IDENTITY_PATH_KEYS}
    return public


def get_run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise AppError("RUN_NOT_FOUND", f"run {run_id} does not exist", {"run_id": run_id})
    return run


def _params_error(exc: ValidationError) -> AppError:
    details = [
        {"field": ".".join(["params", *(str(p) for p in e["loc"])]), "message": e["msg"], "type": e["type"]}
        for e in exc.errors()
    ]
    first = details[0]
    return AppError("VALIDATION_ERROR", f"{first['field']}: {first['message']}", details)


@dataclass(frozen=True)
class TrainingChoice:
    """What to train, checked: the objective, the method and its params with every default filled in."""

    objective: registry.ObjectiveSpec
    method: registry.MethodSpec
    params: dict[str, Any]


def resolve_training_choice(objective_name: str, method_name: str, raw_params: dict[str, Any], queue: str,
                            model_defaults: dict[str, object] | None = None) -> TrainingChoice:
    """Check objective, method and params, and what the queue allows of them (a launch and an estimate alike).
    `model_defaults` are the model's own defaults for the method (the tiny demo model's); the params sent win."""
    try:
        objective = registry.get_objective(objective_name)
    except KeyError:
        names = ", ".join(o.name for o in registry.list_objectives())
        raise AppError("OBJECTIVE_NOT_FOUND", f"objective: unknown objective {objective_name!r} (known: {names})",
                       {"field": "objective"}) from None
    try:
        method = registry.get_method(method_name)
    except KeyError:
        names = ", ".join(m.name for m in registry.list_methods())
        raise AppError("METHOD_NOT_FOUND", f"method: unknown method {method_name!r} (known: {names})",
                       {"field": "method"}) from None
    if not method.supports(objective.name):
        raise AppError("VALIDATION_ERROR", f"method: {method.name} does not support objective {objective.name}",
                       [{"field": "method", "message": f"not available for objective {objective.name}"}])
    if method.requires_cuda and queue == "cpu":
        raise AppError("VALIDATION_ERROR", f"method: {method.title} needs a CUDA GPU (bitsandbytes quantization); "
                       "choose lora on the cpu queue, or send the run to a GPU queue",
                       [{"field": "method",
                         "message": f"{method.title} needs a CUDA GPU: choose LoRA here, or a GPU queue"}])
    try:
        params = registry.resolve_params(
            method.name, {**registry.model_defaults_for(objective, model_defaults or {}), **raw_params}, objective.name)
    except ValidationError as exc:
        raise _params_error(exc) from None
    precision = params.get("precision", "fp32")
    if precision != "fp32" and queue == "cpu":
        raise AppError("VALIDATION_ERROR", f"params.precision: {precision} needs a GPU; use fp32 on the cpu queue, "
                       "or send the run to a GPU queue", [{"field": "params.precision", "message": "needs a GPU"}])
    if params.get("zero_stage", 0) and queue == "cpu":
        raise AppError("VALIDATION_ERROR", "params.zero_stage: DeepSpeed ZeRO shards across GPUs; use 0 (plain DDP) on "
                       "the cpu queue, or send the run to a GPU queue",
                       [{"field": "params.zero_stage", "message": "needs GPUs"}])
    _check_process_count(queue, params.get("num_processes", 1))
    return TrainingChoice(objective=objective, method=method, params=params)


def check_params_fit_model(choice: TrainingChoice, model_path: Path) -> None:
    """Refuse at launch what the run would fail on once a worker loads the model: target modules the model does not
    have, more layers to train than it has, and a max_length beyond its context. Read from the model built on the meta
    device, so no weight is read."""
    try:
        _check_target_modules(choice.params, str(model_path))
        _check_trainable_layers(choice.params, str(model_path))
        _check_context_length(choice.params, str(model_path))
    except (OSError, ValueError) as exc:  # a config transformers cannot read, or an architecture it cannot build
        raise AppError("VALIDATION_ERROR", f"model: cannot read the model's config to check the params: {exc}",
                       [{"field": "model", "message": "config not readable"}]) from None


def _check_target_modules(params: dict[str, Any], model_path: str) -> None:
    target_modules = params.get("target_modules")
    if not target_modules:
        return  # the method's default for the architecture
    unknown = model_fit.unknown_target_modules(model_path, target_modules)
    if unknown:
        layers = ", ".join(model_fit.model_layers(model_path).short_names)
        message = (f"the model has no layer {', '.join(map(repr, unknown))}; its linear and embedding layers are "
                   f"{layers} (or use {model_fit.ALL_LINEAR!r})")
        raise AppError("VALIDATION_ERROR", f"params.target_modules: {message}",
                       [{"field": "params.target_modules", "message": message, "unknown": unknown}])


def _check_trainable_layers(params: dict[str, Any], model_path: str) -> None:
    trainable_layers = params.get("trainable_layers")
    if trainable_layers is None:
        return
    layers = model_fit.layer_count(model_path)
    if trainable_layers > layers:
        message = f"the model has {layers} transformer layers: train at most {layers}"
        raise AppError("VALIDATION_ERROR", f"params.trainable_layers: {message}",
                       [{"field": "params.trainable_layers", "message": message, "layers": layers}])


def _check_context_length(params: dict[str, Any], model_path: str) -> None:
    context = model_fit.context_length(model_path)
    # Prompt-learning methods put their virtual tokens in front of every sequence.
    virtual_tokens = int(params.get("num_virtual_tokens") or 0)
    longest = params["max_length"] + virtual_tokens
    if context is None or longest <= context:
        return
    plus = f" plus {virtual_tokens} virtual tokens" if virtual_tokens else ""
    message = (f"{params['max_length']} tokens{plus} exceed the model's context of {context} tokens "
               "(max_position_embeddings)")
    raise AppError("VALIDATION_ERROR", f"params.max_length: {message}",
                   [{"field": "params.max_length", "message": message, "context_length": context}])


@dataclass(frozen=True)
class PlannedStart:
    """A pipeline stage checked at launch, before the stages it depends on have trained: the model they train, and
    what the stage it starts from (None: the pipeline's model) and the stage that rewards it will be."""

    model: str
    parent: tuple[str, str, str] | None  # (described, objective, method)
    reward: tuple[str, str] | None  # (described, objective)


def resolve_training(session: Session, settings: Settings, body: RunCreate, queue: str,
                     project_id: int, planned: PlannedStart | None = None) -> RunConfig:
    """Check objective, method, params, model (or the run it starts from) and dataset; return the full resolved
    config. With `planned`, the runs it starts from and is rewarded by are pipeline stages still to train: what they
    will be is checked instead of their weights."""
    parent = base_run_of(session, settings, body, project_id) if body.base_run is not None else None
    model = planned.model if planned is not None else parent.model if parent is not None else body.model
    if model is None:
        raise AppError("VALIDATION_ERROR", "model: a base model is required (or base_run, a run to start from)",
                       [{"field": "model", "message": "required"}])
    choice = resolve_training_choice(body.objective, body.method, body.params, queue,
                                     model_param_defaults(settings, model, body.method))
    objective, method, params = choice.objective, choice.method, choice.params
    if parent is not None:
        check_can_start_from(f"run {parent.id} ({parent.name})", parent.objective, parent.method, objective)
    elif planned is not None and planned.parent is not None:
        check_can_start_from(*planned.parent, objective)
    model_path = resolve_model_path(settings, model)
    check_params_fit_model(choice, model_path)
    if body.dataset is None:
        raise AppError("VALIDATION_ERROR", "dataset: a dataset is required",
                       [{"field": "dataset", "message": "required"}])
    dataset = session.get(Dataset, body.dataset)
    if dataset is None or not (dataset.bundled or dataset.project_id == project_id):
        raise AppError("DATASET_NOT_FOUND", f"dataset: dataset {body.dataset} does not exist", {"field": "dataset"})
    if dataset.format not in objective.dataset_formats:
        accepted = ", ".join(objective.dataset_formats)
        raise AppError("VALIDATION_ERROR",
                       f"dataset: {objective.name} takes {accepted} datasets; {dataset.name!r} is {dataset.format}",
                       [{"field": "dataset", "message": f"format {dataset.format} not accepted"}])
    config: RunConfig = {
        "objective": objective.name,
        "method": method.name,
        "model": model,
        "model_path": str(model_path),
        "dataset": {"id": dataset.id, "name": dataset.name, "format": dataset.format,
                    "content_hash": dataset.content_hash, "rows": dataset.row_count,
                    "split_seed": dataset.split_seed},
        "params": params,
    }
    if parent is not None:
        config["base_run"] = {"id": parent.id, "name": parent.name, "objective": parent.objective,
                              "method": parent.method}
        config["start_from"] = start_from_of(parent)
    reward_run_id = params.get(objective.reward_run_param) if objective.reward_run_param else None
    if reward_run_id is not None and planned is not None and planned.reward is not None:
        assert objective.reward_run_param is not None
        check_scores(*planned.reward, f"params.{objective.reward_run_param}")
    elif reward_run_id is not None:
        assert objective.reward_run_param is not None
        scorer = reward_run_of(session, settings, reward_run_id, f"params.{objective.reward_run_param}", project_id)
        config["reward_model"] = {"run_id": scorer.id, "name": scorer.name, "weights": start_from_of(scorer)}
    return config


def check_scores(described: str, objective_name: str, field: str) -> None:
    """A reward run scores text: a run of an objective that generates does not."""
    if registry.get_objective(objective_name).generates:
        raise AppError("VALIDATION_ERROR", f"{field}: {described} is a {objective_name} run, not a reward model; name "
                       "a succeeded run of the reward objective", [{"field": field, "message": "not a reward model"}])


def reward_run_of(session: Session, settings: Settings, run_id: int, field: str, project_id: int) -> Run:
    """The reward run an online RL launch (or the playground) names in `field`, checked: in the project, succeeded, a
    model that scores, with its weights still there."""
    name = field
    run = session.get(Run, run_id)
    if run is None or run.project_id != project_id:
        raise AppError("RUN_NOT_FOUND", f"{name}: run {run_id} does not exist in this project", {"field": name})
    described = f"run {run.id} ({run.name})"
    if run.external:
        raise AppError("VALIDATION_ERROR", f"{name}: {described} was trained outside Tunelab, not a reward model here; "
                       "name a succeeded run of the reward objective", [{"field": name, "message": "external run"}])
    check_scores(described, run.objective, name)
    if run.status != RunStatus.succeeded:
        raise AppError("VALIDATION_ERROR", f"{name}: {described} is {run.status.value}; only a succeeded reward "
                       "model can score", [{"field": name, "message": run.status.value}])
    if not has_folder(settings, run.id, _weights_kind(run)):
        raise AppError("VALIDATION_ERROR", f"{name}: {described} has no {_weights_kind(run)}/ folder left to score "
                       "with", [{"field": name, "message": "weights missing"}])
    return run


def base_run_of(session: Session, settings: Settings, body: RunCreate, project_id: int) -> Run:
    """The run a launch starts from, checked: in the project, trained here, succeeded, with weights a new run can
    train on, and of the base model the launch names (if it names one)."""
    parent = session.get(Run, body.base_run)
    if parent is None or parent.project_id != project_id:
        raise AppError("RUN_NOT_FOUND", f"base_run: run {body.base_run} does not exist in this project",
                       {"field": "base_run"})
    described = f"run {parent.id} ({parent.name})"
    if parent.external:
        raise AppError("VALIDATION_ERROR", f"base_run: {described} was trained outside Tunelab; its weights are not "
                       "here to start from", [{"field": "base_run", "message": "external run"}])
    if parent.status != RunStatus.succeeded:
        raise AppError("VALIDATION_ERROR", f"base_run: {described} is {parent.status.value}; only a succeeded run's "
                       "weights can be started from", [{"field": "base_run", "message": parent.status.value}])
    if body.model is not None and body.model != parent.model:
        raise AppError("VALIDATION_ERROR", f"model: {described} was trained from {parent.model}, not {body.model}; "
                       "leave model out to start from it", [{"field": "model", "message": "not the base_run's model"}])
    if not has_folder(settings, parent.id, _weights_kind(parent)):
        raise AppError("VALIDATION_ERROR", f"base_run: {described} has no {_weights_kind(parent)}/ folder left to "
                       "start from",
                       [{"field": "base_run", "message": "weights missing"}])
    return parent


def check_can_start_from(described: str, parent_objective: str, parent_method: str,
                         objective: registry.ObjectiveSpec) -> None:
    """Whether a run of `objective` can train on the weights of `described` (a run, or a pipeline stage to come).
    A prompt-learning adapter's virtual tokens cannot be merged into the weights to train on top of; and a reward
    model scores text with a head of one output, so a run that generates cannot start from it (a reward run can start
    from a generating run: its score head is new, the layers are the parent's)."""
    method = registry.get_method(parent_method)
    if method.peft and not method.mergeable:
        raise AppError("VALIDATION_ERROR", f"base_run: {described} trained a {parent_method} adapter, virtual tokens "
                       "that cannot be merged into the weights to train on; start from a LoRA, DoRA, IA3 or full "
                       "fine-tuning run", [{"field": "base_run", "message": f"{parent_method} cannot be merged"}])
    if objective.generates and not registry.get_objective(parent_objective).generates:
        raise AppError("VALIDATION_ERROR", f"base_run: {described} is a {parent_objective} model, which scores text "
                       f"and cannot generate; a {objective.name} run starts from a model that generates (use it as "
                       "the reward of an RL run instead)",
                       [{"field": "base_run", "message": f"a {parent_objective} model does not generate"}])


def _weights_kind(run: Run) -> str:
    return "adapter" if registry.get_method(run.method).peft else "model"


def start_from_of(parent: Run) -> list[dict[str, Any]]:
    """The weights a run started from `parent` applies on top of the base, in order: the parent's own start and its
    adapter merged in, or only its full model (which holds everything before it)."""
    kind = _weights_kind(parent)
    before = [] if kind == "model" else list(parent.config.get("start_from", []))
    return [*before, {"run_id": parent.id, "kind": kind, "name": parent.name}]


def _process_capacity(presence: WorkerPresence) -> int | None:
    """How many training processes one worker can give a run: one per CUDA device when it has any, else one per CPU
    core; None when it does not say (a worker from before devices were announced)."""
    devices = presence.get("devices", [])
    cuda = [d for d in devices if d["kind"] == "cuda"]
    if cuda:
        return len(cuda)
    cores = sum(d.get("cores", 0) for d in devices if d["kind"] == "cpu")
    return cores or None


def _check_process_count(queue: str, num_processes: int) -> None:
    """Refuse a run that asks for more processes than the best worker of its queue has devices for. With no worker
    of the queue present, or Redis away, nothing is refused: a bigger worker may start later, and the run waits."""
    if num_processes <= 1:
        return
    try:
        present = [w for w in workers.list_workers() if queue in w["queues"]]
    except Exception:  # noqa: BLE001  (a launch does not depend on Redis; the run waits in SQL)
        log.warning("could not read the workers of queue %r to check num_processes", queue, exc_info=True)
        return
    capacities = [_process_capacity(w) for w in present]
    if not capacities or None in capacities:
        return
    largest = max(c for c in capacities if c is not None)
    if num_processes > largest:
        raise AppError("VALIDATION_ERROR", f"params.num_processes: {num_processes} processes asked, but the largest "
                       f"worker of queue {queue!r} has devices for {largest}",
                       [{"field": "params.num_processes", "message": f"at most {largest} on queue {queue}"}])


def _send_after_commit(session: Session, broker: Broker, run_queue: str) -> None:
    """Once the run's row is committed, send it (and any run of its queue still unsent, older ones first). With
    the broker down the request still succeeds: the run stays queued, unsent, and the reconciler sends it."""
    def send() -> None:
        try:
            queue.dispatch_unsent(broker, run_queue)
        except Exception:  # noqa: BLE001
            log.warning("could not reach the broker; queued runs of %r will be sent when it is back", run_queue,
                        exc_info=True)

    events.call_after_commit(session, send)


def _external_seed(params: dict[str, Any]) -> int:
    """The seed an external run's script reports among its params (0 when it reports none), for the run's seed column:
    a JSON integer in that column's 32-bit range, else 422 naming it (int() of "x" or 1e300, or 2^40 in PostgreSQL's
    INTEGER, was a 500)."""
    seed = params.get("seed", 0)
    if type(seed) is not int or not -MAX_ID - 1 <= seed <= MAX_ID:
        message = f"an integer from {-MAX_ID - 1} to {MAX_ID}, or left out"
        raise AppError("VALIDATION_ERROR", f"params.seed: {message}", [{"field": "params.seed", "message": message}])
    return seed


def create_run(session: Session, settings: Settings, body: RunCreate, broker: Broker | None, project_id: int,
               actor: Actor) -> Run:
    """A new run in `project_id` (the caller's right to launch there is already checked). Without a broker it waits
    queued, unsent, for the reconciler's next sweep to send it."""
    queue = run_queues.checked_queue(settings, body.queue)
    if body.external:
        external_runs.check_params(body.params)
        if body.base_run is not None:
            raise AppError("VALIDATION_ERROR", "base_run: an external run trains outside Tunelab; it starts from "
                           "nothing here", [{"field": "base_run", "message": "not with external"}])
        if body.model is None:
            raise AppError("VALIDATION_ERROR", "model: the base model the run trains is required",
                           [{"field": "model", "message": "required"}])
        run = Run(project_id=project_id, objective=body.objective, method=body.method, model=body.model,
                  dataset_id=None, config={"params": body.params, "external": True},
                  seed=_external_seed(body.params), queue=queue, external=True,
                  status=RunStatus.running, started_at=utcnow(), name=body.name or "")
    else:
        config = resolve_training(session, settings, body, queue, project_id)
        run = Run(project_id=project_id, objective=config["objective"], method=config["method"],
                  model=config["model"], base_run_id=config["base_run"]["id"] if "base_run" in config else None,
                  dataset_id=config["dataset"]["id"], dataset_hash=config["dataset"]["content_hash"],
                  config=config, seed=config["params"]["seed"], queue=queue, name=body.name or "",
                  total_steps=config["params"].get("max_steps") or None)
    session.add(run)
    session.flush()
    if not run.name:
        run.name = f"{run.method}-{Path(run.model).name}-{run.id}"
    audit.record(session, project_id, actor, "run.launch", "run", run.id,
                 f"{actor.label} launched {run.name} ({run.method}, {Path(run.model).name})",
                 external=run.external)
    if not run.external and broker is not None:
        _send_after_commit(session, broker, run.queue)
    return run


def clone_run(session: Session, settings: Settings, source: Run, body: RunClone, broker: Broker,
              actor: Actor) -> Run:
    if source.external:
        raise AppError("VALIDATION_ERROR", "an external run has no training config to clone",
                       [{"field": "run_id", "message": "external run"}])
    params = {**source.config.get("params", {}), **body.params}
    create = RunCreate(name=body.name or f"{source.name} (clone)", objective=source.objective, method=source.method,
                       model=source.model, base_run=source.base_run_id, dataset=source.dataset_id, params=params,
                       queue=body.queue or source.queue)
    return create_run(session, settings, create, broker, source.project_id, actor)


# Listing --------------------------------------------------------------------------------------------------------

_SORT_COLUMNS = {
    "queued_at": Run.queued_at, "name": Run.name, "status": Run.status, "method": Run.method,
    "best_eval_loss": Run.best_eval_loss, "tokens_per_second": Run.tokens_per_second, "wall_time_s": Run.wall_time_s,
}


def _filtered(stmt: Select, status: list[RunStatus] | None, method: str | None, objective: str | None,
              model: str | None, q: str | None, ids: list[int] | None = None,
              filters: run_filters.RunFilters | None = None, dialect: str = "sqlite") -> Select:
    if ids:
        stmt = stmt.where(Run.id.in_(ids))
    if status:
        stmt = stmt.where(Run.status.in_(status))
    if method:
        stmt = stmt.where(Run.method == method)
    if objective:
        stmt = stmt.where(Run.objective == objective)
    if model:
        stmt = stmt.where(Run.model == model)
    if q:
        pattern = f"%{q.lower()}%"
        stmt = stmt.where(or_(func.lower(Run.name).like(pattern), func.lower(Run.model).like(pattern),
                              func.lower(Run.method).like(pattern)))
    return run_filters.apply(stmt, filters, dialect)


@dataclass(frozen=True)
class RunQuery:
    """Which runs a list or an export asks for (the caller's access already narrowed `project_ids` and `ids`)."""

    project_ids: list[int]
    status: list[RunStatus] | None = None
    method: str | None = None
    objective: str | None = None
    model: str | None = None
    q: str | None = None
    ids: list[int] | None = None
    filters: run_filters.RunFilters | None = None

    def where(self, session: Session, stmt: Select) -> Select:
        dialect = session.get_bind().dialect.name
        return _filtered(stmt.where(Run.project_id.in_(self.project_ids)), self.status, self.method, self.objective,
                         self.model, self.q, self.ids, self.filters, dialect)


def list_runs(session: Session, *, project_ids: list[int], status: list[RunStatus] | None = None, method: str | None = None,
              objective: str | None = None, model: str | None = None, q: str | None = None,
              sort: RunSortField = "queued_at", order: str = "desc", limit: int = 50,
              cursor: str | None = None, ids: list[int] | None = None,
              filters: run_filters.RunFilters | None = None, metric_columns: Sequence[str] = ()) -> RunsPublic:
    offset = decode_offset(cursor)
    column = _SORT_COLUMNS[sort]
    direction = column.desc().nulls_last() if order == "desc" else column.asc().nulls_last()
    tie = Run.id.desc() if order == "desc" else Run.id.asc()
    query = RunQuery(project_ids=project_ids, status=status, method=method, objective=objective, model=model, q=q,
                     ids=ids, filters=filters)
    stmt = query.where(session, select(Run)).order_by(direction, tie)
    runs = list(session.scalars(stmt.offset(offset).limit(limit + 1)))
    count = session.scalar(query.where(session, select(func.count(Run.id)))) or 0
    next_cursor = encode_offset(offset + limit) if len(runs) > limit else None
    return RunsPublic(data=to_public_many(session, runs[:limit], metric_columns), count=count,
                      next_cursor=next_cursor)


def queue_position(session: Session, run: Run) -> int | None:
    if run.status != RunStatus.queued:
        return None
    ahead = session.scalar(
        select(func.count(Run.id)).where(
            Run.status == RunStatus.queued, Run.queue == run.queue,
            or_(Run.queued_at < run.queued_at, and_(Run.queued_at == run.queued_at, Run.id < run.id)),
        )
    )
    return (ahead or 0) + 1


def progress_of(run: Run, first_logged: tuple[int, float] | None = None,
                logged_step: int | None = None) -> RunProgress:
    """`first_logged`: the step and wall time of this attempt's first logged training loss. The ETA runs from there,
    not from the start: loading the model and the first steps' warm-up would otherwise count as step time (hours of
    ETA at step 1). Before a second point there is no rate to tell, so no ETA. `logged_step`: an external run's
    newest logged step, its only progress (no worker reports one)."""
    total = run.total_steps
    current = max(run.current_step, logged_step or 0) if run.external else run.current_step
    percent = 100.0 * current / total if total else None
    eta = None
    if run.status == RunStatus.running and total and first_logged is not None and run.progress_at is not None:
        first_step, first_wall_time = first_logged
        steps_since = current - first_step
        if steps_since > 0:
            elapsed = run.progress_at.timestamp() - first_wall_time
            eta = max(0.0, elapsed / steps_since * (total - current))
    phase = run.phase if run.status == RunStatus.running else None
    return RunProgress(current_step=current, total_steps=total, percent=percent, eta_seconds=eta, phase=phase)


def _external_logged_steps(session: Session, runs: list[Run]) -> dict[int, int]:
    """The newest step each external run logged, from the per-key summaries (one small row per key)."""
    external = [run.id for run in runs if run.external]
    if not external:
        return {}
    rows = session.execute(select(MetricSummary.run_id, func.max(MetricSummary.last_step))
                           .where(MetricSummary.run_id.in_(external)).group_by(MetricSummary.run_id))
    return {run_id: int(step) for run_id, step in rows if step is not None}


def _first_logged_steps(session: Session, runs: list[Run]) -> dict[int, tuple[int, float]]:
    """Per running run, the step and wall time of the first training loss of its current attempt (by the metric
    chunks past its start step)."""
    found = {}
    for run in runs:
        if run.status != RunStatus.running:
            continue
        steps, _, wall_times = metrics.points_after_step(session, run.id, "train/loss", run.start_step or 0, 1)
        if steps:
            found[run.id] = (steps[0], wall_times[0])
    return found


def _latest_train_losses(session: Session, run_ids: list[int]) -> dict[int, float]:
    if not run_ids:
        return {}
    rows = session.execute(
        select(MetricSummary.run_id, MetricSummary.last_value).where(
            MetricSummary.run_id.in_(run_ids), MetricSummary.key == "train/loss"
        )
    )
    return {run_id: value for run_id, value in rows}


def tags_of(session: Session, run_ids: list[int]) -> dict[int, list[str]]:
    """Each run's tags, sorted, in one query for the whole list."""
    found: dict[int, list[str]] = {}
    if run_ids:
        rows = session.execute(select(RunTag.run_id, RunTag.tag).where(RunTag.run_id.in_(run_ids))
                               .order_by(RunTag.run_id, RunTag.tag))
        for run_id, tag in rows:
            found.setdefault(run_id, []).append(tag)
    return found


def logged_metric_keys(session: Session, query: "RunQuery", limit: int = 1000) -> list[str]:
    """Every metric key the query's runs logged: what a runs table can show as a column."""
    runs = query.where(session, select(Run.id)).subquery()
    keys = session.scalars(select(MetricSummary.key).where(MetricSummary.run_id.in_(select(runs.c.id)))
                           .distinct().limit(limit))
    return sorted(keys, key=lambda key: (key.startswith("system/"), key))


def _metric_columns(session: Session, run_ids: list[int], keys: Sequence[str]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    if not run_ids or not keys:
        return found
    rows = session.execute(select(MetricSummary).where(MetricSummary.run_id.in_(run_ids),
                                                       MetricSummary.key.in_(list(keys))))
    for (summary,) in rows:
        found.setdefault(summary.run_id, {})[summary.key] = {
            "last": summary.last_value, "last_step": summary.last_step, "min": summary.min_value,
            "max": summary.max_value}
    return found


def to_public_many(session: Session, runs: list[Run], metric_columns: Sequence[str] = ()) -> list[RunPublic]:
    losses = _latest_train_losses(session, [r.id for r in runs])
    columns = _metric_columns(session, [r.id for r in runs], metric_columns)
    tags = tags_of(session, [r.id for r in runs])
    first_logged = _first_logged_steps(session, runs)
    logged_steps = _external_logged_steps(session, runs)
    public = []
    for run in runs:
        item = RunPublic.model_validate(
            {**{c.key: getattr(run, c.key) for c in Run.__table__.columns}, "config": public_config(run.config),
             "trainable_percent": run.trainable_percent,
             "progress": progress_of(run, first_logged.get(run.id), logged_steps.get(run.id)),
             "queue_position": queue_position(session, run),
             "latest_train_loss": losses.get(run.id), "tags": tags.get(run.id, []),
             "metric_columns": columns.get(run.id, {}), **summary_details_of(run)}
        )
        public.append(item)
    return public


def summary_details_of(run: Run) -> dict[str, Any]:
    """RunPublic's memory and truncation, from the figures the engine reported into run.summary_details, and the
    perplexity of its best eval loss where its objective's loss is a next-token loss (not DPO's)."""
    details = run.summary_details or {}
    public: dict[str, Any] = {}
    try:
        reports_perplexity = registry.get_objective(run.objective).reports_perplexity
    except KeyError:  # an external run's own objective name
        reports_perplexity = False
    if reports_perplexity and run.best_eval_loss is not None:
        public["best_eval_perplexity"] = perplexity(run.best_eval_loss)
    if "model_state_bytes" in details or "process_peak_rss_bytes" in details:
        public["memory"] = RunMemoryPublic(
            model_state_bytes=details.get("model_state_bytes"), weights_bytes=details.get("model_state_weights_bytes"),
            gradients_bytes=details.get("model_state_gradients_bytes"),
            optimizer_states_bytes=details.get("model_state_optimizer_states_bytes"),
            cuda_peak_bytes=details.get("cuda_peak_memory_bytes"),
            process_peak_rss_bytes=details.get("process_peak_rss_bytes"))
    if "tokenized_rows" in details:
        public["truncation"] = RunTruncationPublic(rows=details["tokenized_rows"],
                                                   truncated_rows=details.get("truncated_rows", 0),
                                                   truncated_tokens=details.get("truncated_tokens", 0))
    if "generation_rows_requested" in details:
        public["generation_eval"] = RunGenerationEvalPublic(
            rows_requested=details["generation_rows_requested"],
            tuned=generation_scores(details, "generation_"), base=generation_scores(details, "base_generation_"))
    public["reward_accuracy"] = details.get("reward_accuracy")
    public["reward_margin"] = details.get("reward_margin")
    return public


def generation_scores(details: dict[str, Any], prefix: str) -> GenerationScoresPublic | None:
    """One model's generation eval scores from the run's summary details, by their key prefix."""
    if f"{prefix}rows" not in details:
        return None
    return GenerationScoresPublic(rows=details[f"{prefix}rows"], exact_match=details[f"{prefix}exact_match"],
                                  rouge_l=details[f"{prefix}rouge_l"], bleu=details[f"{prefix}bleu"])


def to_public(session: Session, run: Run) -> RunPublic:
    return to_public_many(session, [run])[0]


def request_cancel(session: Session, run_id: int, actor: Actor = SYSTEM, force: bool = False) -> Run:
    """A queued run is canceled at once. A running one stops at its next step, saving a checkpoint; with `force`
    (a run stuck inside a step, or one that ignores the cancel) its worker kills the training process instead."""
    run = get_run(session, run_id)
    if run.status in FINISHED_STATUSES:
        raise AppError("RUN_FINISHED", f"run {run_id} already {run.status.value}", {"status": run.status.value})
    verb = "force-stopped" if force and run.status == RunStatus.running else "canceled"
    audit.record(session, run.project_id, actor, "run.cancel", "run", run_id,
                 f"{actor.label} {verb} {run.name} while {run.status.value}", force=force)
    if run.status == RunStatus.queued:
        # Canceled in SQL now; the worker's claim then finds no queued row and never starts it.
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.queued)
            .values(status=RunStatus.canceled, cancel_requested=True, finished_at=utcnow(),
                    status_reason="canceled before it started")
        )
        if rowcount(result) == 0:  # claimed meanwhile: cancel it as a running run
            session.refresh(run)
            return _cancel_running(session, run, force)
        events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.canceled.value})
    else:
        return _cancel_running(session, run, force)
    session.flush()
    session.refresh(run)
    return run


def _cancel_running(session: Session, run: Run, force: bool) -> Run:
    """The worker hears the request (Redis, with SQL as the fallback); an external run ends now."""
    if run.external:
        finish_run(session, run.id, RunStatus.canceled, "canceled by user")
    else:
        run.cancel_requested = True
        run.force_stop_requested = run.force_stop_requested or force
        events.publish_after_commit(session, run.id, {"type": "force_stop" if force else "cancel"})
    session.flush()
    session.refresh(run)
    return run


def request_resume(session: Session, settings: Settings, run_id: int, broker: Broker, actor: Actor = SYSTEM) -> Run:
    """Put a failed or canceled run back in its queue; it continues from its last checkpoint (or from the start
    when it saved none), as the same run: its metrics and artifacts carry on. A run whose queue is no longer declared
    is refused (422 naming `queue`): clone it onto a declared one."""
    run = get_run(session, run_id)
    if run.external:
        raise AppError("RUN_NOT_RESUMABLE", "an external run is trained outside Tunelab; it cannot be resumed here",
                       {"status": run.status.value})
    if run.status not in RESUMABLE_STATUSES:
        hint = "; clone it to train more" if run.status == RunStatus.succeeded else ""
        raise AppError("RUN_NOT_RESUMABLE", f"run {run_id} is {run.status.value}: only failed or canceled runs can "
                       f"be resumed{hint}", {"status": run.status.value})
    if run.dataset_id is None:
        raise AppError("RUN_NOT_RESUMABLE", f"run {run_id} cannot be resumed: its dataset was deleted",
                       {"status": run.status.value})
    run_queues.checked_queue(settings, run.queue)
    exports.refuse_while_exporting(session, run_id, "resume")
    start = f"step {run.checkpoint_step}" if run.checkpoint_step else "the start (it saved no checkpoint)"
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status.in_(RESUMABLE_STATUSES))
        .values(status=RunStatus.queued, queued_at=utcnow(), finished_at=None, cancel_requested=False,
                force_stop_requested=False, auto_resumes=0, worker=None, heartbeat_at=None,
                dispatched_at=None, dispatch_id=None, dispatch_epoch=None,
                status_reason=f"resumed by {actor.label} from {start}")
    )
    if rowcount(result) == 0:
        raise AppError("RUN_NOT_RESUMABLE", f"run {run_id} changed meanwhile; reload it", {"status": "changed"})
    audit.record(session, run.project_id, actor, "run.resume", "run", run_id,
                 f"{actor.label} resumed {run.name} from {start}")
    events.publish_after_commit(session, run_id, {"type": "status", "status": RunStatus.queued.value})
    _send_after_commit(session, broker, run.queue)
    session.flush()
    session.refresh(run)
    return run


def delete_run(session: Session, settings: Settings, run_id: int, actor: Actor = SYSTEM) -> None:
    run = get_run(session, run_id)
    if run.status not in FINISHED_STATUSES:
        raise AppError("RUN_NOT_FINISHED", f"run {run_id} is {run.status.value}; cancel it before deleting",
                       {"status": run.status.value})
    exports.refuse_while_exporting(session, run_id, "delete")
    children = session.execute(select(Run.id, Run.name).where(Run.base_run_id == run_id).order_by(Run.id)).all()
    if children:
        named = ", ".join(f"{child.id} ({child.name})" for child in children)
        raise AppError("RUN_IN_USE", f"run {run_id} ({run.name}) is where run(s) {named} started from: they load its "
                       "weights to resume, generate and export; delete them first",
                       {"runs": [child.id for child in children]})
    audit.record(session, run.project_id, actor, "run.delete", "run", run_id, f"{actor.label} deleted {run.name}")
    session.delete(run)
    session.flush()
    events.call_after_commit(session, lambda: remove_run_files(settings, run_id))


def lineage(session: Session, run: Run, visible: set[int] | None = None) -> RunLineagePublic:
    """The runs `run` builds on (nearest first) and the runs that started from it; of those, only the `visible` ones
    when given (a share link names the runs it reaches, and no other run's name may leak through it)."""
    ancestors = []
    seen = {run.id}
    parent_id = run.base_run_id
    while parent_id is not None and parent_id not in seen:
        parent = session.get(Run, parent_id)
        if parent is None:
            break
        ancestors.append(parent)
        seen.add(parent.id)
        parent_id = parent.base_run_id
    children = session.scalars(select(Run).where(Run.base_run_id == run.id).order_by(Run.id)).all()
    shown = (lambda found: visible is None or found.id in visible)
    return RunLineagePublic(ancestors=[RunRefPublic.model_validate(r) for r in ancestors if shown(r)],
                            children=[RunRefPublic.model_validate(r) for r in children if shown(r)])
