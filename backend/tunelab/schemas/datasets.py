"""Dataset responses: the stored dataset, pages of them, and a preview of what a model sees."""

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from tunelab.schemas.common import ResourceId
from tunelab.training.formats import DatasetFormat

MAX_NAME_LENGTH = 200  # the dataset.name column


class LengthStats(BaseModel):
    """Length distribution over a dataset's rows, in characters or tokens."""

    count: int = Field(description="Rows measured")
    min: int
    mean: float
    p50: int
    p95: int
    max: int
    over_max_length: int | None = Field(None, description="Rows longer than the max_length asked for, if one was")


class DatasetStats(BaseModel):
    chars: LengthStats | None = Field(
        None, description="Characters of each row's longest training sequence, chat-template markup excluded"
    )


def _optional_form_fields(schema: dict[str, Any]) -> None:
    # A form leaves an optional field out rather than sending null: without a declared default, the generated
    # client types these fields as optional, as it did when FastAPI declared the form.
    for field_schema in schema["properties"].values():
        field_schema.pop("default", None)


class DatasetUpload(BaseModel):
    """The multipart form of POST /datasets (parsed by the route itself, after the caller is checked)."""

    model_config = ConfigDict(json_schema_extra=_optional_form_fields)

    file: Annotated[bytes, WithJsonSchema({"type": "string", "contentMediaType": "application/octet-stream",
                                           "description": "JSONL, one row per line; or CSV (a file named *.csv) "
                                           "with a header row naming the fields, a chat row's messages as JSON "
                                           "in one cell"})]
    name: str | None = Field(None, max_length=MAX_NAME_LENGTH, description="Defaults to the file name without extension")
    format: DatasetFormat | None = Field(None, description="Detected from the first row when omitted")
    project_id: ResourceId | None = Field(None, description="Project to add it to; default as for POST /runs")


class DatasetPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    project_id: int
    name: str
    format: DatasetFormat
    content_hash: str = Field(description="SHA-256 of the stored JSONL: the uploaded bytes (a CSV upload is stored as "
                              "the JSONL it converts to)")
    size_bytes: int
    row_count: int
    split_seed: int = Field(description="Seed that picks the eval split of every run on this dataset (fixed with it)")
    stats: DatasetStats
    bundled: bool = Field(description="Shipped with Tunelab rather than uploaded")
    created_at: datetime


class DatasetsPublic(BaseModel):
    data: list[DatasetPublic]
    count: int = Field(description="All datasets, not only this page")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last page")


class RenderedRow(BaseModel):
    """One row as the model sees it. Instruction, preference and feedback rows have a prompt and a completion
    (preference also the rejected completion, feedback its label); text rows and templated chat rows are one text."""

    line: int = Field(description="1-based line number in the stored JSONL: the uploaded file's line for a JSONL "
                      "upload, the row's number for a CSV one")
    raw: dict[str, Any]
    prompt: str | None = None
    completion: str | None = None
    rejected: str | None = None
    label: bool | None = Field(None, description="Feedback rows: whether the completion is desirable (thumbs up)")
    text: str | None = Field(None, description="Text rows; chat rows through the model's chat template (null without)")


class TruncationPublic(BaseModel):
    """What a max_length cuts away from a dataset trained with SFT, counted on the token sequences TRL's SFTTrainer
    builds (continued pretraining packs rows into blocks and cuts nothing)."""

    max_length: int
    rows: int = Field(description="Rows counted (the whole dataset)")
    truncated_rows: int = Field(description="Rows longer than max_length, cut to it")
    truncated_tokens: int = Field(description="Tokens past max_length over all rows: what training never sees")


class DatasetPreviewPublic(BaseModel):
    dataset_id: int
    format: DatasetFormat
    model: str | None = Field(None, description="The model whose tokenizer rendered the rows, if one was given")
    rows: list[RenderedRow]
    offset: int = Field(description="Rows of the dataset before the first one here")
    total_rows: int = Field(description="Rows of the whole dataset: page on while offset + len(rows) is below it")
    char_stats: LengthStats | None
    token_stats: LengthStats | None = Field(None, description="Over the whole dataset; only with a model")
    truncation: TruncationPublic | None = Field(None, description="Only with a model and a max_length")
