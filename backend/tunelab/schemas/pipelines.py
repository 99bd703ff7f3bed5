"""Pipelines: a chain of runs, each starting from an earlier stage's weights, launched together."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tunelab.schemas.common import ResourceId
from tunelab.schemas.runs import RunPublic

MAX_STAGES = 6

PipelineStatus = Literal["queued", "running", "succeeded", "failed", "canceled"]
StageStatus = Literal["waiting", "queued", "running", "succeeded", "failed", "canceled", "deleted"]


class StageSpec(BaseModel):
    """One stage: a run launched with these settings once the stage before it has succeeded."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=60, description="Shown on the pipeline page, e.g. 'SFT'")
    objective: str = Field(description="Training objective, a name from GET /methods")
    method: str = Field(description="Method name from GET /methods")
    dataset_id: ResourceId = Field(description="Dataset of this stage, in a format its objective takes")
    params: dict[str, Any] = Field(default_factory=dict, description="Params of this stage's run (as POST /runs)")
    start_from: int | None = Field(
        None, ge=0, le=MAX_STAGES, description="The stage (1 for the first) whose trained weights this stage starts "
        "from; 0: the pipeline's model (or base_run); default: the stage before it")
    reward_from: int | None = Field(
        None, ge=1, le=MAX_STAGES, description="For an objective rewarded by a model (grpo, rloo): the stage (1 for "
        "the first) whose reward model scores this stage's completions")


class PipelineSpec(BaseModel):
    """What a pipeline's stages are made from; kept with the pipeline, so that clone starts from it."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="Base model of the first stage (a name from GET /models); required "
                              "unless base_run is given")
    base_run: ResourceId | None = Field(None, description="The first stage starts from this succeeded run's weights")
    template: str | None = Field(None, max_length=40, description="The template it was made from (GET "
                                 "/pipeline-templates), for the record")
    stages: list[StageSpec] = Field(min_length=1, max_length=MAX_STAGES)
    queue: str | None = Field(None, max_length=50, description="A training queue the server declares (GET /queues); "
                              "default the server's default queue")


class PipelineCreate(PipelineSpec):
    project_id: ResourceId | None = Field(None, description="Project to launch in; default as for POST /runs")
    name: str = Field(min_length=1, max_length=200)


class PipelineClone(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200, description="Defaults to '<name> (clone)'")


class StagePublic(BaseModel):
    position: int = Field(description="0 for the first stage")
    name: str
    objective: str
    method: str
    status: StageStatus = Field(description="'waiting' until the stage before it succeeds; then its run's status "
                                "('deleted' when the run was deleted)")
    reason: str | None = Field(description="Why the stage was canceled before it ran, or its run's status reason")
    run: RunPublic | None = Field(description="The stage's run, once launched")
    start_from: int = Field(description="The stage (1 for the first) whose weights it starts from; 0: the pipeline's "
                            "model or base_run")
    reward_from: int | None


class PipelinePublic(BaseModel):
    id: int
    project_id: int
    name: str
    status: PipelineStatus = Field(description="succeeded when every stage has; failed or canceled as the stage that "
                                   "ended it; else running (or queued before the first stage starts)")
    spec: PipelineSpec
    created_by: str | None = Field(description="Email of who launched it; null to a share link's holders")
    created_at: datetime
    final_run_id: int | None = Field(description="The last stage's run, once launched: what studies and the compare "
                                     "view compare pipelines by")
    stage_count: int
    stage_statuses: list[StageStatus] = Field(description="Each stage's status, in order (as the stages' status)")
    current_stage: int | None = Field(description="The stage (0 for the first) queued or running now")


class PipelineDetailPublic(PipelinePublic):
    stages: list[StagePublic]


class PipelinesPublic(BaseModel):
    data: list[PipelinePublic]
    count: int
    next_cursor: str | None


class StageTemplatePublic(BaseModel):
    name: str
    objective: str
    method: str
    dataset_formats: list[str] = Field(description="The dataset formats this stage's objective takes")
    suggested_dataset: str | None = Field(description="A bundled dataset that fits, by name (the tiny demo's)")
    params: dict[str, Any] = Field(description="The template's params for this stage; edit any of them")
    start_from: int | None
    reward_from: int | None


class PipelineTemplatePublic(BaseModel):
    name: str
    title: str
    description: str
    stages: list[StageTemplatePublic]


class PipelineTemplatesPublic(BaseModel):
    data: list[PipelineTemplatePublic]
