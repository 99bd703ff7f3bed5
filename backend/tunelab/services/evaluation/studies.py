"""Studies: runs on one base model and one dataset, one per method × grid cell × seed, launched together with a
matched budget (the same training tokens, eval split and seeds), every config validated before any run is queued;
and what the study page reads: its runs and their fair cost table (services.evaluation.cost_table)."""

import itertools
import math
from bisect import bisect_right
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.models import Run, ShareLink, Study, User
from tunelab.schemas.runs import RunCreate
from tunelab.schemas.studies import (
    MAX_GRID_PARAMS,
    MAX_SEEDS,
    MAX_STUDY_RUNS,
    CostTablePublic,
    GridValue,
    StudiesPublic,
    StudyClone,
    StudyCreate,
    StudyDetailPublic,
    StudyExtend,
    StudyPublic,
    StudySpec,
)
from tunelab.services import metrics
from tunelab.services.accounts import audit, shares
from tunelab.services.accounts.principal import Actor
from tunelab.services.evaluation.cost_table import EvalSplit, RunFigures, cost_table
from tunelab.services.paging import newest_first
from tunelab.services.runs import run_queues, runs
from tunelab.services.runs.queue import Broker
from tunelab.training import registry

# Params a study sets for every run itself: the budget and the seeds are the study's, never one run's.
BUDGET_PARAMS = frozenset({"max_steps", "num_train_epochs", "seed"})
# Params that decide a run's tokens per step: a grid over them keeps the budget matched only when it is in tokens.
TOKENS_PER_STEP_PARAMS = frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "max_length",
                                    "num_processes"})
# The eval split must be one for the whole study, or its eval losses cannot be ranked.
SHARED_ONLY_PARAMS = BUDGET_PARAMS | {"eval_split"}


def _refuse(field: str, message: str, **extra: Any) -> AppError:
    return AppError("VALIDATION_ERROR", f"{field}: {message}", [{"field": field, "message": message, **extra}])


def get_study(session: Session, study_id: int) -> Study:
    study = session.get(Study, study_id)
    if study is None:
        raise AppError("STUDY_NOT_FOUND", f"study {study_id} does not exist", {"study_id": study_id})
    return study


def tokens_per_step(params: dict[str, Any]) -> int:
    """Training tokens of one optimizer step, counting every sequence at max_length (the budget's upper bound)."""
    return (int(params["per_device_train_batch_size"]) * int(params.get("gradient_accumulation_steps", 1))
            * int(params.get("num_processes", 1)) * int(params["max_length"]))


@dataclass(frozen=True)
class PlannedRun:
    """One run of a study, checked: its method, grid cell, seed and the params it is launched with."""

    method: str
    grid: dict[str, GridValue]
    seed: int
    params: dict[str, Any]  # as sent to the launch: shared params, the cell's values, seed and max_steps

    @property
    def key(self) -> tuple:
        return self.method, tuple(sorted(self.grid.items())), self.seed


def _method_fields(objective: str, method: str) -> set[str]:
    try:
        return set(registry.params_model(objective, method).model_fields)
    except KeyError:
        return set()  # an unknown method or objective: the launch check below names it


def _check_spec(spec: StudySpec) -> None:
    for name in spec.params:
        if name in BUDGET_PARAMS:
            raise _refuse(f"params.{name}", "set by the study for every run (budget and seeds), not as a param")
    for name in spec.grid:
        if name in SHARED_ONLY_PARAMS:
            raise _refuse(f"grid.{name}", "must be the same for every run of a study (matched budget and eval split)")
        if name in TOKENS_PER_STEP_PARAMS and spec.budget.train_tokens is None:
            raise _refuse(f"grid.{name}", "changes the tokens of a step: give the budget in train_tokens so that "
                          "every run trains on the same number of tokens")
        if name in spec.params:
            raise _refuse(f"grid.{name}", "given both in the grid and as a shared param")
        if not any(name in _method_fields(spec.objective, method) for method in spec.methods):
            raise _refuse(f"grid.{name}", f"no method of the study ({', '.join(spec.methods)}) has a param {name!r}")


def _cells(spec: StudySpec, method: str) -> Iterator[dict[str, GridValue]]:
    """The grid cells of one method: the product over the grid params it has (a param it lacks is not varied)."""
    fields = _method_fields(spec.objective, method)
    names = [name for name in spec.grid if name in fields]
    for values in itertools.product(*(spec.grid[name] for name in names)):
        yield dict(zip(names, values, strict=True))


def _describe(method: str, grid: dict[str, GridValue], seed: int) -> str:
    values = "".join(f", {name}={value}" for name, value in grid.items())
    return f"{method}{values}, seed {seed}"


def _relabel(exc: AppError, method: str, grid: dict[str, GridValue], seed: int, spec: StudySpec) -> AppError:
    """A launch check's error, said of the study's form: the field the user set (the method, a grid param, a shared
    param, the dataset) and which combination failed."""
    details = exc.details if isinstance(exc.details, list) else [{**(exc.details or {}), "message": exc.message}]
    relabeled = []
    for detail in details:
        field = str(detail.get("field", ""))
        name = field.removeprefix("params.")
        if field == "method":
            field = "methods"
        elif field == "dataset":
            field = "dataset_id"
        elif field.startswith("params.") and name in grid:
            field = f"grid.{name}"
        relabeled.append({**detail, "field": field, "method": method, "grid": grid, "seed": seed})
    first = relabeled[0]
    message = exc.message.split(": ", 1)[-1]
    combination = _describe(method, grid, seed)
    return AppError(exc.code, f"{first['field']}: {combination}: {message}", relabeled)


def plan_runs(session: Session, settings: Settings, spec: StudySpec, project_id: int,
              existing: AbstractSet[tuple] = frozenset()) -> list[PlannedRun]:
    """Every run of `spec` not in `existing` (keys of runs already launched), each config resolved and checked as
    POST /runs checks it; the first bad combination refuses the whole study."""
    _check_spec(spec)
    # Counted before any config is resolved: a long grid is refused at once, not after checking every cell.
    total = sum(math.prod(len(spec.grid[name]) for name in spec.grid if name in _method_fields(spec.objective, method))
                * len(spec.seeds) for method in spec.methods)
    if total > MAX_STUDY_RUNS:
        raise _refuse("methods", f"{total} runs (methods × grid cells × seeds); a study has at most "
                      f"{MAX_STUDY_RUNS}", runs=total)
    queue = run_queues.checked_queue(settings, spec.queue)
    planned: list[PlannedRun] = []
    for method in spec.methods:
        for grid in _cells(spec, method):
            for seed in spec.seeds:
                raw = {**spec.params, **grid, "seed": seed}
                body = RunCreate(objective=spec.objective, method=method, model=spec.model, base_run=spec.base_run,
                                 dataset=spec.dataset_id, params=raw, queue=queue)
                try:
                    resolved = runs.resolve_training(session, settings, body, queue, project_id)["params"]
                except AppError as exc:
                    raise _relabel(exc, method, grid, seed, spec) from None
                steps = spec.budget.max_steps or math.ceil((spec.budget.train_tokens or 0) / tokens_per_step(resolved))
                cell = {name: resolved[name] for name in grid}
                run = PlannedRun(method=method, grid=cell, seed=seed, params={**raw, "max_steps": steps})
                if run.key not in existing:
                    planned.append(run)
    total = len(planned) + len(existing)
    if total > MAX_STUDY_RUNS:
        raise _refuse("methods", f"{total} runs (methods × grid cells × seeds); a study has at most "
                      f"{MAX_STUDY_RUNS}", runs=total)
    return planned


def _launch(session: Session, settings: Settings, study: Study, spec: StudySpec, planned: list[PlannedRun],
            broker: Broker, actor: Actor) -> list[Run]:
    queue = run_queues.checked_queue(settings, spec.queue)
    launched = []
    for plan in planned:
        name = f"{study.name} · {_describe(plan.method, plan.grid, plan.seed)}"[:200]
        body = RunCreate(project_id=study.project_id, name=name,
                         objective=spec.objective, method=plan.method, model=spec.model, base_run=spec.base_run,
                         dataset=spec.dataset_id, params=plan.params, queue=queue)
        run = runs.create_run(session, settings, body, broker, study.project_id, actor)
        run.study_id = study.id
        launched.append(run)
    session.flush()
    return launched


def create_study(session: Session, settings: Settings, body: StudyCreate, broker: Broker, project_id: int,
                 actor: Actor) -> Study:
    spec = StudySpec.model_validate(body.model_dump(exclude={"project_id", "name"}))
    planned = plan_runs(session, settings, spec, project_id)
    study = Study(project_id=project_id, name=body.name.strip() or "study", spec=spec.model_dump(mode="json"),
                  created_by_id=actor.user_id)
    session.add(study)
    session.flush()
    _launch(session, settings, study, spec, planned, broker, actor)
    audit.record(session, project_id, actor, "study.launch", "study", study.id,
                 f"{actor.label} launched study {study.name} ({len(planned)} runs)", runs=len(planned))
    return study


def _run_key(run: Run, spec: StudySpec) -> tuple:
    params = run.config.get("params", {})
    grid = {name: params[name] for name in spec.grid if name in params and name in _method_fields(spec.objective,
                                                                                                   run.method)}
    return run.method, tuple(sorted(grid.items())), run.seed


def study_runs(session: Session, study_id: int) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.study_id == study_id).order_by(Run.id)))


def extend_study(session: Session, settings: Settings, study: Study, body: StudyExtend, broker: Broker,
                 actor: Actor) -> list[Run]:
    """Add methods, values of the study's grid params, or seeds; the runs their new combinations make are launched
    with the study's budget (runs it already has are not launched again)."""
    spec = StudySpec.model_validate(study.spec)
    for name in body.grid:
        if name not in spec.grid:
            raise _refuse(f"grid.{name}", f"not a grid param of this study ({', '.join(spec.grid) or 'none'}); "
                          "clone the study to vary another param")
    if len(spec.grid) > MAX_GRID_PARAMS:
        raise _refuse("grid", f"at most {MAX_GRID_PARAMS} params")
    extended = spec.model_copy(update={
        "methods": list(dict.fromkeys([*spec.methods, *body.methods])),
        "grid": {name: list(dict.fromkeys([*values, *body.grid.get(name, [])])) for name, values in spec.grid.items()},
        "seeds": list(dict.fromkeys([*spec.seeds, *body.seeds])),
    })
    if len(extended.seeds) > MAX_SEEDS:
        raise _refuse("seeds", f"a study has at most {MAX_SEEDS} seeds")
    extended = StudySpec.model_validate(extended.model_dump())
    existing = {_run_key(run, spec) for run in study_runs(session, study.id)}
    planned = plan_runs(session, settings, extended, study.project_id, existing)
    if not planned:
        raise _refuse("methods", "the study already has a run of every combination given; add a method, a grid "
                      "value or a seed")
    study.spec = extended.model_dump(mode="json")
    launched = _launch(session, settings, study, extended, planned, broker, actor)
    _sync_links(session, study)
    audit.record(session, study.project_id, actor, "study.extend", "study", study.id,
                 f"{actor.label} extended study {study.name} with {len(launched)} runs", runs=len(launched))
    return launched


def clone_study(session: Session, settings: Settings, source: Study, body: StudyClone, broker: Broker,
                actor: Actor) -> Study:
    create = StudyCreate(**source.spec, project_id=source.project_id, name=body.name or f"{source.name} (clone)"[:200])
    return create_study(session, settings, create, broker, source.project_id, actor)


def delete_study(session: Session, settings: Settings, study: Study, actor: Actor, with_runs: bool = False) -> None:
    """The study goes and its share links are revoked; its runs stay (detached), or with `with_runs` go too, with
    their metrics and artifacts (refused, changing nothing, while one is queued or running)."""
    if with_runs:
        found = study_runs(session, study.id)
        active = [run.id for run in found if not run.status.finished]
        if active:
            raise AppError("RUN_NOT_FINISHED", f"{len(active)} run(s) of this study are queued or running "
                           f"({', '.join(map(str, active))}); cancel them first, or keep the runs",
                           {"active_runs": active})
        for run in sorted(found, key=lambda run: run.id, reverse=True):  # a run started from another goes first
            runs.delete_run(session, settings, run.id, actor)
    else:
        session.execute(update(Run).where(Run.study_id == study.id).values(study_id=None))
    for link in session.scalars(select(ShareLink).where(ShareLink.study_id == study.id)):
        shares.revoke_share(session, actor, link)
    kept = "with its runs" if with_runs else "(its runs are kept)"
    audit.record(session, study.project_id, actor, "study.delete", "study", study.id,
                 f"{actor.label} deleted study {study.name} {kept}")
    session.delete(study)
    session.flush()


def _sync_links(session: Session, study: Study) -> None:
    """A study's links show all its runs, those added by an extension too."""
    run_ids = [run.id for run in study_runs(session, study.id)]
    session.execute(update(ShareLink).where(ShareLink.study_id == study.id).values(run_ids=run_ids))


def create_share(session: Session, actor: Actor, study: Study, title: str | None, expires_at: datetime | None,
                 allow_downloads: bool) -> tuple[ShareLink, str]:
    return shares.create_share(session, actor, study_runs(session, study.id), title, expires_at, allow_downloads,
                               study=study)


# Reading ----------------------------------------------------------------------------------------------------------


def to_public(session: Session, study: Study, show_creator: bool = True) -> StudyPublic:
    counts = {status: count for status, count in session.execute(
        select(Run.status, func.count(Run.id)).where(Run.study_id == study.id).group_by(Run.status))}
    creator = (session.scalar(select(User.email).where(User.id == study.created_by_id))
               if study.created_by_id and show_creator else None)
    return StudyPublic(id=study.id, project_id=study.project_id, name=study.name,
                       spec=StudySpec.model_validate(study.spec), created_by=creator, created_at=study.created_at,
                       run_count=sum(counts.values()), status_counts={str(k): v for k, v in counts.items()})


def list_studies(session: Session, project_ids: list[int], limit: int, cursor: str | None) -> StudiesPublic:
    """Newest first; the cursor is the id of the last study of the previous page."""
    page = newest_first(session, Study, project_ids, limit, cursor)
    return StudiesPublic(data=[to_public(session, s) for s in page.rows], count=page.count,
                         next_cursor=page.next_cursor)


def read_study(session: Session, study: Study, show_creator: bool = True) -> StudyDetailPublic:
    """`show_creator`: False for a share link's holders, who are told the project and the title, not an email."""
    found = study_runs(session, study.id)
    spec = StudySpec.model_validate(study.spec)
    return StudyDetailPublic(study=to_public(session, study, show_creator), runs=runs.to_public_many(session, found),
                             cost_table=runs_cost_table(session, found, grid_params=list(spec.grid)))


def _eval_split(run: Run) -> EvalSplit | None:
    params = run.config.get("params", {})
    fraction = params.get("eval_split")
    if run.external or not fraction:
        return None
    dataset = run.config.get("dataset", {})
    return EvalSplit(dataset=run.dataset_hash or str(run.dataset_id), split_seed=dataset.get("split_seed"),
                     eval_fraction=float(fraction))


def _varying_params(found: list[Run]) -> list[str]:
    """The params that differ between runs of one method (seeds aside): the cells of a comparison not made as a
    study."""
    varying: set[str] = set()
    for _, group in itertools.groupby(sorted(found, key=lambda r: r.method), key=lambda r: r.method):
        configs = [run.config.get("params", {}) for run in group]
        names = set().union(*configs) - {"seed"}
        varying |= {name for name in names if len({repr(c.get(name)) for c in configs}) > 1}
    return sorted(varying)


def runs_cost_table(session: Session, found: list[Run], grid_params: list[str] | None = None,
                    target_loss: float | None = None) -> CostTablePublic:
    """The cost table of these runs; cells are method × `grid_params` (by default, the params that differ)."""
    names = _varying_params(found) if grid_params is None else grid_params
    run_ids = [run.id for run in found]
    eval_losses = {run_id: list(zip(*metrics.read_points(session, run_id, "eval/loss")[:2], strict=True))
                   for run_id in run_ids}

    def tokens_seen_at(run_id: int) -> Callable[[int], float | None]:
        series: list[metrics.Series] = []  # read on the first call only

        def read(step: int) -> float | None:
            if not series:
                series.append(metrics.read_points(session, run_id, "train/tokens_seen"))
            steps, values, _ = series[0]
            at = bisect_right(steps, step)  # the last point at or before `step`
            return values[at - 1] if at else None
        return read

    # Runs of different base models are never averaged into one cell.
    several_models = len({run.model for run in found}) > 1
    figures = []
    for run in found:
        params = run.config.get("params", {})
        details = run.summary_details or {}
        grid: dict[str, GridValue] = {"model": run.model} if several_models else {}
        grid.update({name: params[name] for name in names if name in params})
        figures.append(RunFigures(
            run_id=run.id, method=run.method, status=run.status.value, step=run.current_step,
            total_steps=run.total_steps, grid=grid,
            base_model=run.model, eval_split=_eval_split(run), tokens_per_second=run.tokens_per_second,
            trainable_percent=run.trainable_percent, model_state_bytes=details.get("model_state_bytes"),
            cuda_peak_bytes=details.get("cuda_peak_memory_bytes"),
            process_peak_rss_bytes=details.get("process_peak_rss_bytes"), best_eval_loss=run.best_eval_loss,
            eval_losses=eval_losses[run.id], tokens_seen_at=tokens_seen_at(run.id),
            tokens_per_step=tokens_per_step(params) if "max_length" in params and "per_device_train_batch_size" in
            params else None,
            generation_exact_match=details.get("generation_exact_match"),
            generation_rouge_l=details.get("generation_rouge_l"), generation_bleu=details.get("generation_bleu"),
            base_generation={f"generation_{name}": details[f"base_generation_{name}"]
                             for name in ("exact_match", "rouge_l", "bleu") if f"base_generation_{name}" in details}
            or None,
            generation_setting=(details["generation_rows_requested"], params.get("generation_max_new_tokens", 0))
            if "generation_rows" in details else None,
            reward_accuracy=details.get("reward_accuracy")))
    return cost_table(figures, target_loss)
