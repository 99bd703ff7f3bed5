"""Datasets: upload (JSONL or CSV, validated row by row), list, read, preview as a model sees it, page by page."""

from collections.abc import AsyncGenerator
from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser, parse_options_header

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import DatasetEditor, DatasetReader, UserDep
from tunelab.core.errors import AppError, responses
from tunelab.core.settings import Settings
from tunelab.core.text import INVALID_CHAR, INVALID_CHAR_MESSAGE
from tunelab.db.models import Dataset, Role
from tunelab.schemas.common import MAX_ID, ResourceId
from tunelab.schemas.datasets import DatasetPreviewPublic, DatasetPublic, DatasetsPublic, DatasetUpload
from tunelab.services.accounts import access
from tunelab.services.accounts.principal import Principal
from tunelab.services.catalog import datasets as datasets_service
from tunelab.services.catalog.models import resolve_model_path

router = APIRouter(tags=["datasets"])

# Room for the multipart boundaries, part headers and small fields around a file of the largest allowed size.
FORM_OVERHEAD_BYTES = 64 * 1024
UPLOAD_FIELDS = ("name", "format", "project_id")


def _require_editor_somewhere(session: Session, principal: Principal) -> None:
    """Before the body: the exact project is in the form, but a caller who can edit none is refused at once."""
    if not any(role.allows(Role.editor) for role in access.roles(session, principal).values()):
        raise AppError("FORBIDDEN", "uploading a dataset needs the editor role in a project; you have it in none",
                       {"needed": Role.editor.value})


async def _limited(request: Request, settings: Settings, limit: int) -> AsyncGenerator[bytes, None]:
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise datasets_service.upload_too_large(settings)
        yield chunk


def _invalid(field: str, message: str, kind: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": kind}])


class _NotUtf8(Exception):
    def __init__(self, field: str) -> None:
        self.field = field


class _Utf8MultiPartParser(MultiPartParser):
    """Starlette's parser, refusing a field, part name or file name that is not UTF-8 (naming the field) where the
    stock one decodes it as Latin-1: mojibake, stored as a dataset's name."""

    def on_headers_finished(self) -> None:
        self._charset = "utf-8"  # what browsers send, declaring no charset: another one declared is not honoured
        _, options = parse_options_header(self._current_part.content_disposition)
        name = options.get(b"name", b"")
        for raw, field in ((name, None), (options.get(b"filename", b""), "file")):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _NotUtf8(field or name.decode("utf-8", "replace")) from None
        super().on_headers_finished()

    def on_part_end(self) -> None:
        part = self._current_part
        if part.file is None:
            try:
                part.data.decode("utf-8")
            except UnicodeDecodeError:
                raise _NotUtf8(part.field_name) from None
        super().on_part_end()


async def _read_form(request: Request, settings: Settings) -> FormData:
    """The multipart form, streamed through the size limit: a body over it stops as soon as it is, and the answer
    does not wait for the rest. A Content-Length over the limit is refused before any of the body is read."""
    limit = settings.upload_max_bytes + FORM_OVERHEAD_BYTES
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise datasets_service.upload_too_large(settings)
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        raise _invalid("file", "the body must be multipart/form-data with a file part", "missing")
    parser = _Utf8MultiPartParser(request.headers, _limited(request, settings, limit), max_files=1,
                                  max_fields=len(UPLOAD_FIELDS))
    try:
        return await parser.parse()
    except MultiPartException as exc:
        raise _invalid("file", exc.message, "multipart_invalid") from None
    except _NotUtf8 as exc:
        raise _invalid(exc.field, "not valid UTF-8", "string_unicode") from None


def _upload_fields(form: FormData) -> tuple[DatasetUpload, str | None]:
    """The validated form (errors name the field, as for a JSON body) and the uploaded file's name."""
    file = form.get("file")
    values: dict[str, object] = {name: value for name in UPLOAD_FIELDS
                                 if isinstance(value := form.get(name), str) and value != ""}
    for name, given in (*values.items(), ("file", file.filename if isinstance(file, UploadFile) else None)):
        if isinstance(given, str) and INVALID_CHAR.search(given):
            raise _invalid(name, INVALID_CHAR_MESSAGE, "string_invalid_character")
    if isinstance(file, UploadFile):
        values["file"] = file.file.read()
    try:
        return DatasetUpload.model_validate(values), file.filename if isinstance(file, UploadFile) else None
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None


@router.post(
    "/datasets", status_code=status.HTTP_201_CREATED, response_model=DatasetPublic,
    responses=responses(401, 403, 404, 413, 422),
    openapi_extra={"requestBody": {"required": True, "content": {"multipart/form-data": {
        "schema": {"$ref": "#/components/schemas/DatasetUpload"}}}}},
)
async def create_dataset(request: Request, session: SessionDep, settings: SettingsDep,
                         principal: UserDep) -> Dataset:
    """Upload a dataset; the same bytes under the same name return the existing dataset. The caller is checked
    before the body is read, and a body over TUNELAB_UPLOAD_MAX_BYTES is refused (413) as it streams."""
    await run_in_threadpool(_require_editor_somewhere, session, principal)
    form = await _read_form(request, settings)
    try:
        upload, filename = await run_in_threadpool(_upload_fields, form)
        # Validation and tokenization are CPU-bound: they run in the thread pool, not on the event loop.
        target = await run_in_threadpool(access.project_for_new_work, session, principal, upload.project_id,
                                         "uploading a dataset")
        return await run_in_threadpool(datasets_service.create_dataset, session, settings, upload.name, filename,
                                       upload.file, upload.format, target, principal.actor)
    finally:
        await form.close()


@router.get("/datasets", response_model=DatasetsPublic, responses=responses(400, 401, 404, 422))
def read_datasets(
    session: SessionDep,
    principal: UserDep,
    project_id: Annotated[ResourceId | None, Query(description="This project's datasets and the bundled samples")] = None,
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


@router.delete("/datasets/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT,
               responses=responses(401, 403, 404, 409, 422))
def delete_dataset(dataset: DatasetEditor, session: SessionDep, settings: SettingsDep, principal: UserDep) -> None:
    """Delete a dataset and its stored file (kept while another dataset has the same content). Refused (409
    DATASET_IN_USE, naming them) while runs trained on it or studies use it, and for the bundled samples."""
    datasets_service.delete_dataset_for(session, settings, dataset, principal.actor)


@router.get("/datasets/{dataset_id}/preview", response_model=DatasetPreviewPublic,
            responses=responses(401, 404, 422))
def read_dataset_preview(
    dataset: DatasetReader,
    settings: SettingsDep,
    model: Annotated[
        str | None, Query(description="Model name (GET /models) or local path whose tokenizer renders the rows")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Rows to render")] = 20,
    # Bounded so that offset + limit stays an index islice takes: no dataset holds anywhere near 2^31 rows.
    offset: Annotated[int, Query(ge=0, le=MAX_ID, description="Rows to skip before the first one rendered")] = 0,
    max_length: Annotated[int | None, Query(ge=1, description="Count the rows longer than this many tokens")] = None,
) -> DatasetPreviewPublic:
    model_path = resolve_model_path(settings, model) if model else None
    return datasets_service.preview_dataset(settings, dataset, model_path, limit, max_length, offset)
