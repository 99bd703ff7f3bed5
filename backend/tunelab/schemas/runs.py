from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from tunelab.db.models.run import RunStatus
from tunelab.schemas.common import DEFAULT_OBJECTIVE, ResourceId
from tunelab.training.sink import RunPhase


def _tag(value: str) -> str:
    if "," in value:
        raise ValueError("a tag cannot contain a comma")
    return value


# The limits are services.runs.run_filters' (MAX_TAG_LENGTH, MAX_TAGS_PER_RUN), which the GET /runs tag filter shares.
RunTagName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50),
                       AfterValidator(_tag), Field(description="1–50 characters, no commas")]
RunTagList = Annotated[list[RunTagName], Field(max_length=20, description="At most 20 tags")]

RunSortField = Literal["queued_at", "name", "status", "method", "best_eval_loss", "tokens_per_second", "wall_time_s"]


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: ResourceId | None = Field(
        None, description="Project to launch in; default: `default` if you can edit it, else your only editable one"
    )
    name: str | None = Field(None, max_length=200, description="Defaults to <method>-<model>-<n>")
    objective: str = Field(DEFAULT_OBJECTIVE, description="Training objective, a name from GET /methods")
    method: str = Field(description="Fine-tuning method, a name from GET /methods")
    model: str | None = Field(None, description="Base model: a name from GET /models, an absolute path under one of "
                              "the server's model roots (TUNELAB_MODEL_ROOTS), or a hub id in the worker's local "
                              "cache; required unless base_run is given (then it is that run's base model)")
    base_run: ResourceId | None = Field(
        None, description="Start from this succeeded run's trained weights instead of the bare base model: its adapter "
        "merged into the weights (LoRA, DoRA, IA3) or its full model, with the tokenizer it trained with. SFT after "
        "continued pretraining, DPO after SFT: any objective may follow any other")
    dataset: ResourceId | None = Field(None, description="Dataset id from GET /datasets; required unless external")
    params: dict[str, Any] = Field(default_factory=dict, description="The method's parameters (GET /methods schema)")
    queue: str | None = Field(None, max_length=50, description="A training queue the server declares (GET /queues); "
                              "default the server's default queue")
    external: bool = Field(
        False, description="A run trained outside Tunelab that only logs metrics here; it is never queued"
    )


class RunClone(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict, description="Parameters that override the source run's")
    queue: str | None = Field(None, max_length=50, description="A training queue the server declares (GET /queues); "
                              "default the source run's")


class RunFinish(BaseModel):
    """How an external run ended, as its training script saw it."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["succeeded", "failed"]
    reason: str | None = Field(None, max_length=2000, description="Why it failed (an exception, say); shown on the run")


class RunUpdate(BaseModel):
    """What an editor changes on a run: each field optional; `tags` replaces the whole list."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] | None = None
    notes: str | None = Field(None, max_length=20_000, description="Free text; an empty string clears the notes")
    tags: RunTagList | None = Field(None, description="The run's tags after the change (a full replacement)")


RunsBulkActionName = Literal["tag", "untag", "delete", "cancel"]


class RunsBulkAction(BaseModel):
    """One action on many runs, applied to all of them or (when any cannot take it) to none."""

    model_config = ConfigDict(extra="forbid")

    run_ids: Annotated[list[ResourceId], Field(min_length=1, max_length=200)]
    action: RunsBulkActionName
    tags: RunTagList | None = Field(None, description="For tag and untag: the tags added to or removed from each run")


class RunsBulkPublic(BaseModel):
    action: RunsBulkActionName
    count: int = Field(description="Runs the action was applied to")
    data: list["RunPublic"] = Field(description="The runs after the action (empty after delete)")


class RunProgress(BaseModel):
    current_step: int
    total_steps: int | None
    percent: float | None
    eta_seconds: float | None
    phase: RunPhase | None = Field(
        None, description="What a running run's process is doing (null before it reports, and once the run ended): "
        "before step 1 it reads the data, loads the model and evaluates it untrained; after the last step it evaluates, "
        "saves and generates")


class RunMemoryPublic(BaseModel):
    """What a run's training holds in memory, measured from the tensors after an optimizer step."""

    model_state_bytes: int | None = Field(None, description="Parameters + gradients + optimizer states")
    weights_bytes: int | None = None
    gradients_bytes: int | None = None
    optimizer_states_bytes: int | None = None
    cuda_peak_bytes: int | None = Field(None, description="torch.cuda.max_memory_allocated, on a GPU only")
    process_peak_rss_bytes: int | None = Field(
        None, description="The training process's peak resident set: mostly the interpreter and its libraries on CPU")


class RunTruncationPublic(BaseModel):
    """What max_length cut from the run's dataset, counted on the token sequences the trainer builds."""

    rows: int = Field(description="Rows tokenized (train and eval split)")
    truncated_rows: int = Field(description="Rows longer than max_length")
    truncated_tokens: int = Field(description="Tokens past max_length, which training never saw")


class GenerationScoresPublic(BaseModel):
    """One model's greedy answers to the generation eval rows, scored against the expected answers."""

    rows: int = Field(description="Rows answered within the time budget, which the scores cover")
    exact_match: float = Field(description="Fraction of rows answered exactly (case and whitespace aside), 0–1")
    rouge_l: float = Field(description="Mean ROUGE-L F1 over the rows (rouge-score), 0–1")
    bleu: float = Field(description="Corpus BLEU over the rows (sacrebleu), 0–100")


class RunGenerationEvalPublic(BaseModel):
    """Evaluation by generation after training: the run's answers and the base model's to the same eval rows."""

    rows_requested: int = Field(description="The first generation_eval_rows eval rows with an expected answer")
    tuned: GenerationScoresPublic | None
    base: GenerationScoresPublic | None = Field(description="The base model's scores on the same rows: the baseline")


class RunRefPublic(BaseModel):
    """Another run, named: a run's lineage."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    objective: str
    method: str
    status: RunStatus


class RunLineagePublic(BaseModel):
    ancestors: list[RunRefPublic] = Field(description="The runs whose weights this one builds on, the nearest first")
    children: list[RunRefPublic] = Field(description="Runs that started from this one's weights, oldest first")


class MetricColumnPublic(BaseModel):
    """One logged metric of a run in a table column: its latest value and its extremes over every step."""

    last: float
    last_step: int
    min: float
    max: float


class MetricKeysPublic(BaseModel):
    data: list[str] = Field(description="Metric keys logged by the runs, sorted (system/* last)")


class RunPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    project_id: int
    objective: str
    method: str
    model: str
    dataset_id: int | None
    dataset_hash: str | None
    config: dict[str, Any] = Field(description="The resolved config: objective, method, model, dataset (id, name, "
                                   "format, content hash, rows), params and the base's identity; never a server path")
    seed: int
    queue: str
    external: bool
    study_id: int | None = Field(None, description="The study the run was launched in (GET /studies/{study_id})")
    base_run_id: int | None = Field(None, description="The run whose trained weights this one started from (its "
                                    "lineage: GET /runs/{run_id}/lineage)")
    tags: list[str] = Field(default_factory=list, description="Sorted")
    notes: str | None = None
    status: RunStatus
    status_reason: str | None
    cancel_requested: bool
    force_stop_requested: bool = Field(description="A force stop was asked for: the worker kills the training process")
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    worker: str | None
    attempt: int = Field(description="Which start of training this is: 1 is the first; resumes add one each")
    auto_resumes: int = Field(description="Automatic resumes after a lost worker since the last start a user asked for")
    checkpoint_step: int | None = Field(description="Step of the newest checkpoint: where a resume continues from")
    versions: dict[str, str]
    progress: RunProgress
    metric_seq: int = Field(description="Number of the run's latest metrics flush: open its event stream after it")
    queue_position: int | None = Field(None, description="1 = next to start; only while queued")
    trainable_params: int | None
    total_params: int | None
    trainable_percent: float | None
    peak_memory_bytes: int | None = Field(description="CUDA's max allocated on a GPU; elsewhere the model state "
                                         "(weights + gradients + optimizer states, from the tensors)")
    wall_time_s: float | None
    tokens_per_second: float | None
    final_eval_loss: float | None
    best_eval_loss: float | None
    latest_train_loss: float | None = None
    metric_columns: dict[str, MetricColumnPublic] = Field(
        default_factory=dict, description="The logged metrics asked for with metric_column (GET /runs), by key; a key "
        "the run has not logged is absent")
    best_eval_perplexity: float | None = Field(
        None, description="exp(best eval loss), for objectives whose loss is a next-token loss (not DPO's)")
    memory: RunMemoryPublic | None = None
    truncation: RunTruncationPublic | None = Field(None, description="Absent for objectives that truncate nothing")
    generation_eval: RunGenerationEvalPublic | None = Field(
        None, description="Absent until the run has finished evaluating by generation, or when it does not")
    reward_accuracy: float | None = Field(
        None, description="Preference objectives: fraction of eval pairs whose chosen answer the policy rewards above "
        "the rejected one, at the last eval (0 on the base model, the reference)")
    reward_margin: float | None = Field(None, description="Preference objectives: mean chosen − rejected reward, "
                                        "at the last eval")


class RunsPublic(BaseModel):
    data: list[RunPublic]
    count: int
    next_cursor: str | None


class RunLogPublic(BaseModel):
    text: str
    offset: int = Field(description="Byte offset of the first byte returned")
    next_offset: int = Field(description="Pass as offset to read what follows")
    size: int


class ArtifactPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    path: str
    kind: str
    size_bytes: int
    created_at: datetime
    download_url: str


class ArtifactArchivePublic(BaseModel):
    folder: str = Field(description="adapter, model (full fine-tuning) or merged (an export)")
    download_url: str = Field(description="The folder as one zip, with the run's tokenizer; unpacked, it is what "
                              "PeftModel.from_pretrained (adapter, on its base, named by model id) or "
                              "AutoModelForCausalLM (model, merged) loads")


class ArtifactsPublic(BaseModel):
    data: list[ArtifactPublic]
    count: int
    archives: list[ArtifactArchivePublic] = Field(default_factory=list)
