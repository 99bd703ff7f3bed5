from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tunelab.schemas.common import DEFAULT_OBJECTIVE, ResourceId
from tunelab.schemas.runs import RunPublic

MAX_STUDY_RUNS = 48
MAX_METHODS = 8
MAX_GRID_PARAMS = 3
MAX_SEEDS = 5

GridValue = int | float | str | bool


class StudyBudget(BaseModel):
    """The same training for every run: a token budget (each run's max_steps is derived from its batch size and
    max_length) or a number of optimizer steps."""

    model_config = ConfigDict(extra="forbid")

    train_tokens: int | None = Field(None, ge=1, le=10**12, description="Training tokens per run (padded to "
                                     "max_length: steps = ceil(tokens / (batch × accumulation × processes × "
                                     "max_length)))")
    max_steps: int | None = Field(None, ge=1, le=10**7, description="Optimizer steps per run")

    @model_validator(mode="after")
    def one_budget(self) -> "StudyBudget":
        if (self.train_tokens is None) == (self.max_steps is None):
            raise ValueError("give exactly one of train_tokens and max_steps")
        return self


class StudySpec(BaseModel):
    """What a study's runs are made from; kept with the study, so that extend and clone start from it."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="Base model of every run (a name from GET /models); required "
                              "unless base_run is given")
    base_run: ResourceId | None = Field(None, description="Every run starts from this succeeded run's trained "
                                        "weights (as POST /runs base_run): methods compared on top of an SFT run")
    dataset_id: ResourceId = Field(description="Dataset of every run; its split seed fixes the eval rows")
    objective: str = Field(DEFAULT_OBJECTIVE, description="Training objective, a name from GET /methods")
    methods: list[str] = Field(min_length=1, max_length=MAX_METHODS, description="Method names from GET /methods")
    grid: dict[str, list[GridValue]] = Field(
        default_factory=dict, description="Up to 3 params, each with the values to try (e.g. r: [8, 16]); a "
        "method gets the cells of the params it has")
    seeds: list[int] = Field(default_factory=lambda: [42], min_length=1, max_length=MAX_SEEDS,
                             description="Every cell is trained once per seed")
    budget: StudyBudget
    params: dict[str, Any] = Field(default_factory=dict, description="Params shared by every run (max_length, "
                                   "per_device_train_batch_size, eval_split, …)")
    queue: str | None = Field(None, max_length=50, description="A training queue the server declares (GET /queues); "
                              "default the server's default queue")

    @model_validator(mode="after")
    def bounded(self) -> "StudySpec":
        if self.model is None and self.base_run is None:
            raise ValueError("model: give the base model, or base_run to start every run from a run's weights")
        if len(self.grid) > MAX_GRID_PARAMS:
            raise ValueError(f"grid: at most {MAX_GRID_PARAMS} params")
        for name, values in self.grid.items():
            if not values or len(values) > MAX_STUDY_RUNS:
                raise ValueError(f"grid.{name}: give 1 to {MAX_STUDY_RUNS} values")
        if len(set(self.methods)) != len(self.methods):
            raise ValueError("methods: each method once")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: each seed once")
        return self


class StudyCreate(StudySpec):
    project_id: ResourceId | None = Field(None, description="Project to launch in; default as for POST /runs")
    name: str = Field(min_length=1, max_length=200)


class StudyExtend(BaseModel):
    """More of the same study: methods, grid values or seeds added to its spec; the budget stays."""

    model_config = ConfigDict(extra="forbid")

    methods: list[str] = Field(default_factory=list, max_length=MAX_METHODS)
    grid: dict[str, list[GridValue]] = Field(default_factory=dict, description="More values of the study's grid "
                                             "params")
    seeds: list[int] = Field(default_factory=list, max_length=MAX_SEEDS)


class StudyClone(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200, description="Defaults to '<name> (clone)'")


class StudyPublic(BaseModel):
    id: int
    project_id: int
    name: str
    spec: StudySpec
    created_by: str | None = Field(description="Email of who launched it; null to a share link's holders")
    created_at: datetime
    run_count: int
    status_counts: dict[str, int] = Field(description="Runs per status")


class StudiesPublic(BaseModel):
    data: list[StudyPublic]
    count: int
    next_cursor: str | None


class CostValue(BaseModel):
    mean: float
    spread: float = Field(description="Sample standard deviation over the cell's runs; 0 with one run")
    n: int = Field(description="Runs the value is measured on")


class CostColumn(BaseModel):
    key: str
    label: str
    unit: str
    better: Literal["lower", "higher"]
    ranked: bool = Field(description="False when the column's values may not be compared (see not_ranked_reason)")
    not_ranked_reason: str | None = None


class CostRow(BaseModel):
    cell: str = Field(description="Method and grid values, e.g. 'lora · r=8'")
    method: str
    grid: dict[str, GridValue]
    run_ids: list[int]
    finished_run_ids: list[int] = Field(description="The runs that succeeded: the only ones the values are over")
    unfinished: list[str] = Field(description="Each other run and where it stands, e.g. 'run 12: running, step 40 of "
                                  "60': left out of the values, the target loss and the ranking")
    values: dict[str, CostValue | None] = Field(description="Column key -> mean ± spread over the cell's succeeded "
                                                "runs (None: not measured, or no run finished)")
    best: list[str] = Field(description="Column keys where this cell beats the runner-up by more than the noise")


class CostBaseline(BaseModel):
    """The base model with no training, scored on the same generation eval rows: what each cell gained."""

    label: str
    values: dict[str, float] = Field(description="Column key -> the base model's figure (generation columns only)")


class CostTablePublic(BaseModel):
    columns: list[CostColumn]
    rows: list[CostRow]
    target_loss: float | None = Field(description="The eval loss 'tokens to target' counts to: by default the worst "
                                      "cell's best eval loss, over succeeded runs")
    notes: list[str] = Field(description="Why a column is not ranked, and the noise rule")
    baseline: CostBaseline | None = Field(
        None, description="The base model's generation scores, when the finished runs share one base model, eval "
        "split and generation setting")


class StudyDetailPublic(BaseModel):
    study: StudyPublic
    runs: list[RunPublic]
    cost_table: CostTablePublic


class CostTableQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_ids: list[ResourceId] = Field(min_length=1, max_length=50)
    target_loss: float | None = Field(None, gt=0)
