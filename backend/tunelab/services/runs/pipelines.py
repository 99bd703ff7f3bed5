"""Pipelines: runs that start from runs, launched together (SFT → reward model → GRPO; SFT → DPO; pretrain → SFT).

Every stage is checked at launch, as POST /runs checks a run, with the stages it depends on taken as what they will
be; nothing is created when one is refused. Then only the first stage's run exists. A stage's run is created (and
queued) when the stage before it succeeds: by the worker that settled that run, by the reaper's sweep when that worker
died first, or by the request that canceled a stage. Whoever comes first launches it: one conditional UPDATE moves the
stage from waiting to launched, so a stage never gets two runs. A failed or canceled stage cancels the stages after it,
with the reason."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import rowcount
from tunelab.db.models import Pipeline, PipelineStage, Run, RunStatus, ShareLink, StageState, User
from tunelab.schemas.common import MAX_ID
from tunelab.schemas.pipelines import (
    PipelineClone,
    PipelineCreate,
    PipelineDetailPublic,
    PipelinePublic,
    PipelineSpec,
    PipelinesPublic,
    PipelineStatus,
    PipelineTemplatePublic,
    PipelineTemplatesPublic,
    StagePublic,
    StageSpec,
    StageStatus,
    StageTemplatePublic,
)
from tunelab.schemas.runs import RunCreate
from tunelab.services.accounts import audit, shares
from tunelab.services.accounts.principal import SYSTEM, Actor
from tunelab.services.paging import newest_first
from tunelab.services.runs import run_queues, runs
from tunelab.services.runs.queue import Broker
from tunelab.training import registry
from tunelab.training.pipeline_templates import TEMPLATES


def get_pipeline(session: Session, pipeline_id: int) -> Pipeline:
    pipeline = session.get(Pipeline, pipeline_id)
    if pipeline is None:
        raise AppError("PIPELINE_NOT_FOUND", f"pipeline {pipeline_id} does not exist", {"pipeline_id": pipeline_id})
    return pipeline


def templates() -> PipelineTemplatesPublic:
    return PipelineTemplatesPublic(data=[PipelineTemplatePublic(
        name=template.name, title=template.title, description=template.description,
        stages=[StageTemplatePublic(
            name=stage.name, objective=stage.objective, method=stage.method,
            dataset_formats=list(registry.get_objective(stage.objective).dataset_formats),
            suggested_dataset=stage.suggested_dataset, params=stage.params, start_from=stage.start_from,
            reward_from=stage.reward_from) for stage in template.stages]) for template in TEMPLATES])


# Launching --------------------------------------------------------------------------------------------------------


def _refuse(field: str, message: str) -> AppError:
    return AppError("VALIDATION_ERROR", f"{field}: {message}", [{"field": field, "message": message}])


def _start_from(stage: StageSpec, index: int) -> int:
    """The stage number (1 for the first) whose weights stage `index` starts from; 0: the pipeline's model."""
    return index if stage.start_from is None else stage.start_from


def _described(spec: PipelineSpec, number: int) -> str:
    return f"stage {number} ({spec.stages[number - 1].name})"


def _relabel(exc: AppError, index: int, spec: PipelineSpec) -> AppError:
    """A launch check's error, said of the pipeline's form: the stage and the field of it the user set."""
    details = exc.details if isinstance(exc.details, list) else [{**(exc.details or {}), "message": exc.message}]
    stage = spec.stages[index]
    reward_param = registry.get_objective(stage.objective).reward_run_param if stage.reward_from else None
    relabeled = []
    for detail in details:
        field = str(detail.get("field", ""))
        if field == "dataset":
            field = "dataset_id"
        elif field == "base_run" and _start_from(stage, index):
            field = "start_from"
        elif reward_param and field == f"params.{reward_param}":
            field = "reward_from"
        if field not in ("model", "base_run", "queue"):
            field = f"stages.{index}.{field}" if field else f"stages.{index}"
        relabeled.append({**detail, "field": field, "stage": index})
    message = exc.message.split(": ", 1)[-1]
    return AppError(exc.code, f"{relabeled[0]['field']}: {_described(spec, index + 1)}: {message}", relabeled)


def _check_references(spec: PipelineSpec) -> None:
    for index, stage in enumerate(spec.stages):
        number = index + 1
        if stage.start_from is not None and stage.start_from >= number:
            raise _refuse(f"stages.{index}.start_from", f"stage {number} starts from an earlier stage (1 to "
                          f"{number - 1}) or 0 (the pipeline's model), not stage {stage.start_from}")
        if stage.reward_from is None:
            continue
        if stage.reward_from >= number:
            raise _refuse(f"stages.{index}.reward_from", f"stage {number} is rewarded by an earlier stage (1 to "
                          f"{number - 1}), not stage {stage.reward_from}")
        try:
            reward_param = registry.get_objective(stage.objective).reward_run_param
        except KeyError:
            continue  # the stage's own check names the unknown objective
        if reward_param is None:
            raise _refuse(f"stages.{index}.reward_from", f"a {stage.objective} stage is not rewarded by a model; "
                          "only an online RL stage (grpo, rloo) is")
        if stage.params.get(reward_param) is not None:
            raise _refuse(f"stages.{index}.params.{reward_param}", f"give reward_from or params.{reward_param}, not "
                          "both")


def _model_of(session: Session, spec: PipelineSpec, project_id: int) -> str:
    if spec.base_run is not None:
        parent = session.get(Run, spec.base_run)
        if parent is None or parent.project_id != project_id:
            raise AppError("RUN_NOT_FOUND", f"base_run: run {spec.base_run} does not exist in this project",
                           {"field": "base_run"})
        return parent.model
    if spec.model is None:
        raise _refuse("model", "give the base model, or base_run to start the first stage from a run's weights")
    return spec.model


def _run_create(spec: PipelineSpec, stage: StageSpec, index: int, queue: str, stage_runs: dict[int, int]) -> RunCreate:
    """Stage `index`'s launch; `stage_runs` maps the stage numbers it depends on to their runs (a placeholder id while
    they are planned)."""
    start_from = _start_from(stage, index)
    params = dict(stage.params)
    if stage.reward_from is not None:
        reward_param = registry.get_objective(stage.objective).reward_run_param
        assert reward_param is not None  # _check_references
        params[reward_param] = stage_runs[stage.reward_from]
    return RunCreate(objective=stage.objective, method=stage.method,
                     model=spec.model if not start_from else None,
                     base_run=stage_runs[start_from] if start_from else spec.base_run,
                     dataset=stage.dataset_id, params=params, queue=queue)


def check_spec(session: Session, settings: Settings, spec: PipelineSpec, project_id: int) -> None:
    """Every stage checked as POST /runs checks a run; the stages it starts from and is rewarded by as they will be.
    The first refusal names the stage and its field, and the whole pipeline is refused."""
    _check_references(spec)
    queue = run_queues.checked_queue(settings, spec.queue)
    model = _model_of(session, spec, project_id)
    # The stages before this one are not trained yet: an id no run has stands for each.
    pending = {number: MAX_ID for number in range(1, len(spec.stages) + 1)}
    for index, stage in enumerate(spec.stages):
        start_from = _start_from(stage, index)
        parent = spec.stages[start_from - 1] if start_from else None
        rewarder = spec.stages[stage.reward_from - 1] if stage.reward_from else None
        planned = runs.PlannedStart(
            model=model,
            parent=(_described(spec, start_from), parent.objective, parent.method) if parent else None,
            reward=(_described(spec, stage.reward_from), rewarder.objective) if rewarder and stage.reward_from
            else None)
        body = _run_create(spec, stage, index, queue, pending)
        if parent is not None:
            body = body.model_copy(update={"base_run": None, "model": model})
        try:
            runs.resolve_training(session, settings, body, queue, project_id,
                                  planned if parent is not None or rewarder is not None else None)
        except AppError as exc:
            raise _relabel(exc, index, spec) from None


def create_pipeline(session: Session, settings: Settings, body: PipelineCreate, broker: Broker | None,
                    project_id: int, actor: Actor) -> Pipeline:
    spec = PipelineSpec.model_validate(body.model_dump(exclude={"project_id", "name"}))
    check_spec(session, settings, spec, project_id)
    pipeline = Pipeline(project_id=project_id, name=body.name.strip() or "pipeline",
                        spec=spec.model_dump(mode="json"), created_by_id=actor.user_id)
    session.add(pipeline)
    session.flush()
    session.add_all(PipelineStage(pipeline_id=pipeline.id, position=index) for index in range(len(spec.stages)))
    session.flush()
    audit.record(session, project_id, actor, "pipeline.launch", "pipeline", pipeline.id,
                 f"{actor.label} launched pipeline {pipeline.name} ({len(spec.stages)} stages)",
                 stages=len(spec.stages))
    advance(session, settings, pipeline, broker, actor)
    return pipeline


def clone_pipeline(session: Session, settings: Settings, source: Pipeline, body: PipelineClone,
                   broker: Broker | None, actor: Actor) -> Pipeline:
    create = PipelineCreate(**source.spec, project_id=source.project_id,
                            name=body.name or f"{source.name} (clone)"[:200])
    return create_pipeline(session, settings, create, broker, source.project_id, actor)


# Moving on ---------------------------------------------------------------------------------------------------------


def stages_of(session: Session, pipeline_id: int) -> list[PipelineStage]:
    return list(session.scalars(select(PipelineStage).where(PipelineStage.pipeline_id == pipeline_id)
                                .order_by(PipelineStage.position)))


def _end_rest(session: Session, stages: list[PipelineStage], after: int, reason: str) -> None:
    """The stages after position `after` that were never launched are canceled with `reason`."""
    for stage in stages[after + 1:]:
        if stage.state == StageState.waiting:
            stage.state, stage.reason = StageState.canceled, reason
    session.flush()


def advance(session: Session, settings: Settings, pipeline: Pipeline, broker: Broker | None,
            actor: Actor = SYSTEM) -> Run | None:
    """Move the pipeline on from where its stages stand: launch the next stage once every stage before it has
    succeeded, or cancel the rest after a stage that failed or was canceled. Returns the run it launched, if any.
    Safe to call any number of times from any process."""
    spec = PipelineSpec.model_validate(pipeline.spec)
    stages = stages_of(session, pipeline.id)
    stage_runs: dict[int, int] = {}
    for stage in stages:
        number = stage.position + 1
        described = _described(spec, number)
        if stage.state in (StageState.canceled, StageState.failed):
            return None
        if stage.state == StageState.launched:
            run = session.get(Run, stage.run_id) if stage.run_id is not None else None
            if run is None:
                _end_rest(session, stages, stage.position, f"{described}'s run was deleted")
                return None
            if run.status == RunStatus.succeeded:
                stage_runs[number] = run.id
                continue
            if run.status in (RunStatus.failed, RunStatus.canceled):
                why = f": {run.status_reason}" if run.status_reason else ""
                _end_rest(session, stages, stage.position, f"{described} {run.status.value}{why}")
            return None
        return _launch(session, settings, pipeline, spec, stage, stages, stage_runs, broker, actor)
    return None


def _launch(session: Session, settings: Settings, pipeline: Pipeline, spec: PipelineSpec, stage: PipelineStage,
            stages: list[PipelineStage], stage_runs: dict[int, int], broker: Broker | None,
            actor: Actor) -> Run | None:
    # Whoever moves the stage from waiting launches it; a second process finds no waiting row and leaves it.
    won = rowcount(session.execute(update(PipelineStage).where(PipelineStage.id == stage.id,
                                                               PipelineStage.state == StageState.waiting)
                                   .values(state=StageState.launched)))
    if not won:
        return None
    session.refresh(stage)
    index = stage.position
    stage_spec = spec.stages[index]
    body = _run_create(spec, stage_spec, index, run_queues.checked_queue(settings, spec.queue), stage_runs)
    body = body.model_copy(update={"project_id": pipeline.project_id,
                                   "name": f"{pipeline.name} · {stage_spec.name}"[:200]})
    try:
        # Its checks refuse before anything is written (no savepoint: its after-commit dispatch would run at the
        # savepoint's release, while this transaction still holds SQLite's write lock).
        run = runs.create_run(session, settings, body, broker, pipeline.project_id, actor)
    except AppError as exc:
        # What was checked at launch no longer holds (a run it starts from was deleted, say): said on the stage.
        stage.state, stage.reason = StageState.failed, f"not launched: {exc.message}"
        _end_rest(session, stages, index, f"{_described(spec, index + 1)} could not be launched")
        return None
    stage.run_id = run.id
    session.flush()
    _sync_links(session, pipeline)
    return run


def advance_after_run(session: Session, settings: Settings, run_id: int, broker: Broker | None) -> Run | None:
    """The run finished or was canceled: if it is a pipeline's stage, move its pipeline on."""
    pipeline_id = session.scalar(select(PipelineStage.pipeline_id).where(PipelineStage.run_id == run_id))
    if pipeline_id is None:
        return None
    pipeline = session.get(Pipeline, pipeline_id)
    return advance(session, settings, pipeline, broker) if pipeline is not None else None


def advance_all(session: Session, settings: Settings, broker: Broker | None) -> list[Run]:
    """The reaper's sweep: every pipeline with a stage still waiting, in case the process that finished the stage
    before it died before moving it on (or a run was canceled, failed by the reaper, or deleted)."""
    waiting = session.scalars(select(PipelineStage.pipeline_id).where(PipelineStage.state == StageState.waiting)
                              .distinct())
    launched = []
    for pipeline_id in list(waiting):
        pipeline = session.get(Pipeline, pipeline_id)
        if pipeline is not None and (run := advance(session, settings, pipeline, broker)) is not None:
            launched.append(run)
    return launched


def cancel_pipeline(session: Session, settings: Settings, pipeline: Pipeline, actor: Actor) -> None:
    """The stage queued or running is canceled (as POST /runs/{id}/cancel), and the stages after it never start."""
    stages = stages_of(session, pipeline.id)
    active = None
    for stage in stages:
        if stage.state == StageState.launched and stage.run_id is not None:
            run = session.get(Run, stage.run_id)
            if run is not None and not run.status.finished:
                active = run
    waiting = [stage for stage in stages if stage.state == StageState.waiting]
    if active is None and not waiting:
        raise AppError("PIPELINE_FINISHED", f"pipeline {pipeline.id} has no stage left to run",
                       {"status": status_of(session, pipeline, stages)})
    reason = f"pipeline canceled by {actor.label}"
    for stage in waiting:
        stage.state, stage.reason = StageState.canceled, reason
    if active is not None:
        runs.request_cancel(session, active.id, actor)
    audit.record(session, pipeline.project_id, actor, "pipeline.cancel", "pipeline", pipeline.id,
                 f"{actor.label} canceled pipeline {pipeline.name}")
    session.flush()


def delete_pipeline(session: Session, pipeline: Pipeline, actor: Actor) -> None:
    """The pipeline goes with the stages not yet launched, and its share links are revoked; its runs are kept."""
    for link in session.scalars(select(ShareLink).where(ShareLink.pipeline_id == pipeline.id)):
        shares.revoke_share(session, actor, link)
    audit.record(session, pipeline.project_id, actor, "pipeline.delete", "pipeline", pipeline.id,
                 f"{actor.label} deleted pipeline {pipeline.name} (its runs are kept)")
    session.delete(pipeline)
    session.flush()


# Sharing -----------------------------------------------------------------------------------------------------------


def pipeline_runs(session: Session, pipeline_id: int) -> list[Run]:
    return list(session.scalars(select(Run).join(PipelineStage, PipelineStage.run_id == Run.id)
                                .where(PipelineStage.pipeline_id == pipeline_id).order_by(PipelineStage.position)))


def _sync_links(session: Session, pipeline: Pipeline) -> None:
    """A pipeline's links show every stage's run, those launched after the link was made too."""
    run_ids = [run.id for run in pipeline_runs(session, pipeline.id)]
    session.execute(update(ShareLink).where(ShareLink.pipeline_id == pipeline.id).values(run_ids=run_ids))


def create_share(session: Session, actor: Actor, pipeline: Pipeline, title: str | None, expires_at: datetime | None,
                 allow_downloads: bool) -> tuple[ShareLink, str]:
    return shares.create_share(session, actor, pipeline_runs(session, pipeline.id), title, expires_at,
                               allow_downloads, pipeline=pipeline)


# Reading ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StageView:
    stage: PipelineStage
    run: Run | None

    @property
    def status(self) -> StageStatus:
        if self.stage.state == StageState.launched:
            return self.run.status.value if self.run is not None else "deleted"
        return cast(StageStatus, self.stage.state.value)  # waiting | canceled | failed


def _views(session: Session, stages: list[PipelineStage]) -> list[_StageView]:
    run_ids = [stage.run_id for stage in stages if stage.run_id is not None]
    found = {run.id: run for run in session.scalars(select(Run).where(Run.id.in_(run_ids)))} if run_ids else {}
    return [_StageView(stage, found.get(stage.run_id) if stage.run_id is not None else None) for stage in stages]


def _status(views: list[_StageView]) -> tuple[PipelineStatus, int | None]:
    """The pipeline's status, and the stage queued or running now."""
    for view in views:
        status = view.status
        if status == "succeeded":
            continue
        if status in ("queued", "running"):
            started = status == "running" or view.stage.position > 0
            return ("running" if started else "queued"), view.stage.position
        if status == "waiting":
            return "running", None  # between two stages: the next one is being launched
        return ("canceled" if status in ("canceled", "deleted") else "failed"), None
    return "succeeded", None


def status_of(session: Session, pipeline: Pipeline, stages: list[PipelineStage] | None = None) -> PipelineStatus:
    return _status(_views(session, stages if stages is not None else stages_of(session, pipeline.id)))[0]


def _public_fields(session: Session, pipeline: Pipeline, views: list[_StageView], show_creator: bool) -> dict[str, Any]:
    status, current = _status(views)
    creator = (session.scalar(select(User.email).where(User.id == pipeline.created_by_id))
               if pipeline.created_by_id and show_creator else None)
    final = views[-1].run if views else None
    return {"id": pipeline.id, "project_id": pipeline.project_id, "name": pipeline.name, "status": status,
            "spec": PipelineSpec.model_validate(pipeline.spec), "created_by": creator,
            "created_at": pipeline.created_at, "final_run_id": final.id if final is not None else None,
            "stage_count": len(views), "stage_statuses": [view.status for view in views], "current_stage": current}


def to_public(session: Session, pipeline: Pipeline, show_creator: bool = True) -> PipelinePublic:
    return PipelinePublic(**_public_fields(session, pipeline, _views(session, stages_of(session, pipeline.id)),
                                           show_creator))


def list_pipelines(session: Session, project_ids: list[int], limit: int, cursor: str | None) -> PipelinesPublic:
    """Newest first; the cursor is the id of the last pipeline of the previous page."""
    page = newest_first(session, Pipeline, project_ids, limit, cursor)
    return PipelinesPublic(data=[to_public(session, p) for p in page.rows], count=page.count,
                           next_cursor=page.next_cursor)


def read_pipeline(session: Session, pipeline: Pipeline, show_creator: bool = True) -> PipelineDetailPublic:
    """`show_creator`: False for a share link's holders, who are told the project and the title, not an email."""
    spec = PipelineSpec.model_validate(pipeline.spec)
    views = _views(session, stages_of(session, pipeline.id))
    launched = [view.run for view in views if view.run is not None]
    public_runs = {run.id: public for run, public in zip(launched, runs.to_public_many(session, launched),
                                                          strict=True)}
    stages = []
    for view in views:
        stage_spec = spec.stages[view.stage.position]
        run = view.run
        reason = view.stage.reason if view.stage.reason is not None else run.status_reason if run is not None else None
        stages.append(StagePublic(
            position=view.stage.position, name=stage_spec.name, objective=stage_spec.objective,
            method=stage_spec.method, status=view.status, reason=reason,
            run=public_runs[run.id] if run is not None else None,
            start_from=_start_from(stage_spec, view.stage.position), reward_from=stage_spec.reward_from))
    return PipelineDetailPublic(**_public_fields(session, pipeline, views, show_creator), stages=stages)

