"""Datasets: upload (JSONL, validated row by row), list, read, preview as a model sees it."""

from typing import Annotated

from fastapi import APIRouter, File, Form, Query, UploadFile, status

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import DatasetReader, UserDep
from tunelab.core.errors import responses
from tunelab.db.models import Dataset
from tunelab.schemas.datasets import DatasetPreviewPublic, DatasetPublic, DatasetsPublic
from tunelab.services import access
from tunelab.services import datasets as datasets_service
from tunelab.services.models import resolve_model_path
from tunelab.training.formats import DatasetFormat

router = APIRouter(tags=["datasets"])

UPLOAD_CHUNK_BYTES = 1024 * 1024


def _read_at_most(upload: UploadFile, limit: int) -> bytes:
    """Up to limit + 1 bytes: enough for the service to see an upload is too large without holding all of it."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit and (chunk := upload.file.read(min(UPLOAD_CHUNK_BYTES, limit + 1 - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


# Sync handlers: validation and tokenization are CPU-bound, so they run in the thread pool, not on the event loop.
@router.post(
    "/datasets", status_code=status.HTTP_201_CREATED, response_model=DatasetPublic,
    responses=responses(401, 403, 404, 413, 422),
)
def create_dataset(
    session: SessionDep,
    settings: SettingsDep,
    principal: UserDep,
    file: Annotated[UploadFile, File(description="JSONL, one row per line")],
    name: Annotated[str | None, Form(max_length=datasets_service.MAX_NAME_LENGTH, description="Defaults to the file name without extension")] = None,
    dataset_format: Annotated[
        DatasetFormat | None, Form(alias="format", description="Detected from the first row when omitted")
    ] = None,
    project_id: Annotated[int | None, Form(description="Project to add it to; default as for POST /runs")] = None,
) -> Dataset:
    """Upload a dataset; the same bytes under the same name return the existing dataset."""
    target = access.project_for_new_work(session, principal, project_id, "uploading a dataset")
    data = _read_at_most(file, settings.upload_max_bytes)
    return datasets_service.create_dataset(session, settings, name, file.filename, data, dataset_format, target,
                                           principal.actor)


@router.get("/datasets", response_model=DatasetsPublic, responses=responses(400, 401, 404, 422))
def read_datasets(
    session: SessionDep,
    principal: UserDep,
    project_id: Annotated[int | None, Query(description="This project's datasets and the bundled samples")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
) -> DatasetsPublic:
    if project_id is not None:
        access.project(session, principal, project_id)
        project_ids = [project_id]
    else:
        project_ids = access.readable_project_ids(session, principal)
    page = datasets_service.list_datasets(session, project_ids, limit, cursor)
    return DatasetsPublic.model_validate(page, from_attributes=True)


@router.get("/datasets/{dataset_id}", response_model=DatasetPublic, responses=responses(401, 404, 422))
def read_dataset(dataset: DatasetReader) -> Dataset:
    return dataset


@router.get("/datasets/{dataset_id}/preview", response_model=DatasetPreviewPublic,
            responses=responses(401, 404, 422))
def read_dataset_preview(
    dataset: DatasetReader,
    settings: SettingsDep,
    model: Annotated[
        str | None, Query(description="Model name (GET /models) or local path whose tokenizer renders the rows")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Rows to render")] = 20,
    max_length: Annotated[int | None, Query(ge=1, description="Count the rows longer than this many tokens")] = None,
) -> DatasetPreviewPublic:
    model_path = resolve_model_path(settings, model) if model else None
    return datasets_service.preview_dataset(settings, dataset, model_path, limit, max_length)
