"""Dataset responses: the stored dataset, pages of them, and a preview of what a model sees."""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tunelab.training.formats import DatasetFormat


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


class DatasetPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    project_id: int
    name: str
    format: DatasetFormat
    content_hash: str = Field(description="SHA-256 of the uploaded bytes")
    size_bytes: int
    row_count: int
    stats: DatasetStats
    bundled: bool = Field(description="Shipped with Tunelab rather than uploaded")
    created_at: datetime


class DatasetsPublic(BaseModel):
    data: list[DatasetPublic]
    count: int = Field(description="All datasets, not only this page")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last page")


class RenderedRow(BaseModel):
    """One row as the model sees it. Instruction and preference rows have a prompt and a completion (preference
    also the rejected completion); text rows and templated chat rows are one text."""

    line: int = Field(description="1-based line number in the uploaded file")
    raw: dict[str, Any]
    prompt: str | None = None
    completion: str | None = None
    rejected: str | None = None
    text: str | None = Field(None, description="Text rows; chat rows through the model's chat template (null without)")


class DatasetPreviewPublic(BaseModel):
    dataset_id: int
    format: DatasetFormat
    model: str | None = Field(None, description="The model whose tokenizer rendered the rows, if one was given")
    rows: list[RenderedRow]
    char_stats: LengthStats | None
    token_stats: LengthStats | None = Field(None, description="Over the whole dataset; only with a model")
