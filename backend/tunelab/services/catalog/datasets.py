"""Datasets: validate an upload row by row, store it content-addressed, list it, and preview it as a model sees it.

Files live in the artifact store (TUNELAB_DATASET_DIR, or an S3 store's datasets/) named by the SHA-256 of their
bytes, so identical uploads share one file; every machine reads them through its cache.
Uploading the same bytes under the same name (and format) again returns the existing dataset; under another name
it is a second dataset that points at the same file.
"""

import bisect
import csv
import hashlib
import io
import json
import logging
import math
import os
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from pydantic import ValidationError
from sqlalchemy import ColumnElement, event, func, or_, select
from sqlalchemy.orm import Session, SessionTransaction

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.core.store import dataset_key, get_store
from tunelab.core.store_cache import cached_file
from tunelab.core.text import INVALID_CHAR_MESSAGE, INVALID_JSON_ESCAPE, invalid_string_paths
from tunelab.db.models import Dataset, Run, Study
from tunelab.schemas.datasets import (
    MAX_NAME_LENGTH,
    DatasetPreviewPublic,
    LengthStats,
    RenderedRow,
    TruncationPublic,
)
from tunelab.services.accounts import audit
from tunelab.services.accounts.principal import SYSTEM, Actor
from tunelab.services.accounts.projects import default_project_id
from tunelab.services.live import events
from tunelab.services.paging import decode_id, encode_id
from tunelab.training.formats import (
    ROW_MODELS,
    SIGNATURE_KEYS,
    ChatRow,
    DatasetFormat,
    FeedbackRow,
    InstructionRow,
    PreferenceRow,
    PromptRow,
    Row,
    TextRow,
    detect_format,
)
from tunelab.training.models import load_tokenizer
from tunelab.training.objectives import online_rl
from tunelab.training.objectives.kto import feedback_records
from tunelab.training.objectives.preference import preference_records
from tunelab.training.objectives.sft import convert_rows as sft_records
from tunelab.training.objectives.sft import instruction_prompt
from tunelab.training.truncation import (
    RowLengths,
    count_truncation,
    preference_sequence_lengths,
    sft_sequence_lengths,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

MAX_REPORTED_ERRORS = 50
CSV_SUFFIX = ".csv"
CSV_BOOLEANS = {"true": True, "false": False}
TOKENIZE_BATCH_ROWS = 1000
_UTF8_BOM = b"\xef\xbb\xbf"
# Files written in the session's open transaction; removed again if it does not commit (see the listeners below).
_NEW_FILES_KEY = "tunelab_new_dataset_files"


class RowError(TypedDict):
    line: int | None
    field: str | None
    message: str


@dataclass
class ValidatedDataset:
    content_hash: str
    size_bytes: int
    format: DatasetFormat | None = None
    row_count: int = 0
    char_stats: LengthStats | None = None
    errors: list[RowError] = field(default_factory=list)  # the first MAX_REPORTED_ERRORS
    error_count: int = 0

    @property
    def is_valid(self) -> bool:
        return self.error_count == 0

    def add_error(self, line: int | None, field_path: str | None, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append({"line": line, "field": field_path, "message": message})

    def summary(self) -> str:
        """The first error, prefixed with its line, and how many others there are."""
        first = self.errors[0]
        text = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
        if first["line"] is not None:
            text = f"line {first['line']}: {text}"
        if self.error_count > 1:
            text += f" (and {self.error_count - 1} more error{'s' if self.error_count > 2 else ''})"
        return text


# ---------------------------------------------------------------- validation


def validate_jsonl(data: bytes, declared_format: DatasetFormat | None) -> ValidatedDataset:
    """Check every line of a JSONL upload against its format's row model, collecting all errors (not only the first)."""
    result = ValidatedDataset(
        content_hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data), format=declared_format
    )
    first_object = True
    char_lengths: list[int] = []
    for line_number, raw in _nonblank_lines(data.split(b"\n")):
        result.row_count += 1
        obj = _parse_object(line_number, raw, result)
        if obj is None:
            continue
        if first_object:
            first_object = False
            if declared_format is None:
                result.format = detect_format(obj)
                if result.format is None:
                    result.add_error(line_number, None, _undetectable_message(obj))
            else:
                _check_declared_format(line_number, obj, declared_format, result)
        if result.format is None:
            continue  # no format to check rows against; JSON is still checked on every line
        try:
            row = ROW_MODELS[result.format].model_validate(obj)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                result.add_error(line_number, ".".join(str(p) for p in err["loc"]) or None, err["msg"])
            continue
        char_lengths.append(_character_length(row))
    if result.row_count == 0:
        result.add_error(None, None, "the file has no rows")
    if result.is_valid:
        result.char_stats = length_stats(char_lengths)
    return result


def validate_csv(data: bytes, declared_format: DatasetFormat | None) -> tuple[bytes, ValidatedDataset]:
    """A CSV upload as the JSONL it is stored as, validated as a JSONL upload is. Its header row names each column's
    field (a chat row's `messages` is one cell of JSON); every other row is one dataset row. Errors name the CSV line
    a row starts on (a quoted cell may span lines) and the column (the field)."""
    structure = ValidatedDataset(content_hash="", size_bytes=len(data), format=declared_format)
    try:
        text = data.removeprefix(_UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        structure.add_error(None, None, f"not valid UTF-8 (byte {exc.start + 1} of the file)")
        return b"", structure
    jsonl_lines: list[bytes] = []
    csv_lines: list[int] = []  # the CSV line each JSONL line's row starts on
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [name.strip() for name in next(reader, [])]
        for column, name in enumerate(header, start=1):
            if not name:
                structure.add_error(1, None, f"column {column} of the header row has no name")
            elif header.index(name) < column - 1:
                structure.add_error(1, name, "the header row names this column twice")
        row_start = reader.line_num + 1
        for cells in reader:
            if any(cell.strip() for cell in cells):
                row = _csv_row(row_start, header, cells, structure)
                if row is not None:
                    jsonl_lines.append(json.dumps(row, ensure_ascii=False).encode())
                    csv_lines.append(row_start)
            row_start = reader.line_num + 1
    except csv.Error as exc:
        structure.add_error(reader.line_num, None, f"invalid CSV: {exc}")
    if not header:
        structure.add_error(None, None, "the file has no header row naming the columns")
    if not jsonl_lines and structure.error_count:
        return b"", structure
    jsonl = b"".join(line + b"\n" for line in jsonl_lines)
    result = validate_jsonl(jsonl, declared_format)
    for error in result.errors:
        if error["line"] is not None:
            error["line"] = csv_lines[error["line"] - 1]
    if structure.error_count:
        result.errors = sorted([*structure.errors, *result.errors], key=lambda e: e["line"] or 0)[:MAX_REPORTED_ERRORS]
        result.error_count += structure.error_count
        result.char_stats = None
    return jsonl, result


def _csv_row(line_number: int, header: list[str], cells: list[str], result: ValidatedDataset) -> dict[str, Any] | None:
    """One CSV row as the object a JSONL line would hold; None (with the error noted) when it cannot be one."""
    if len(cells) != len(header):
        result.add_error(line_number, None, f"{len(cells)} cells where the header row has {len(header)} columns")
        return None
    row: dict[str, Any] = dict(zip(header, cells, strict=True))
    if "messages" in row:
        try:
            row["messages"] = json.loads(row["messages"])
        except json.JSONDecodeError as exc:
            result.add_error(line_number, "messages",
                             f"the cell must hold the messages as JSON: {exc.msg} (character {exc.pos + 1})")
            return None
    if {"completion", "label"} <= row.keys() and row["label"].strip().lower() in CSV_BOOLEANS:
        # A feedback row's rating: a cell holds text, and the row model takes only a real true or false.
        row["label"] = CSV_BOOLEANS[row["label"].strip().lower()]
    return row


def _nonblank_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of each non-blank line; numbers count blank lines too, as an editor does."""
    for line_number, raw in enumerate(lines, start=1):
        if line_number == 1:
            raw = raw.removeprefix(_UTF8_BOM)  # editors on Windows write one; it is not part of the first row
        if raw.strip():
            yield line_number, raw


def _parse_object(line_number: int, raw: bytes, result: ValidatedDataset) -> dict[str, Any] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.add_error(line_number, None, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        result.add_error(line_number, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return None
    except RecursionError:  # the parser recurses per level: a row nested thousands deep was a 500
        result.add_error(line_number, None, "invalid JSON: nested too deeply")
        return None
    if not isinstance(obj, dict):
        result.add_error(line_number, None, f"expected a JSON object, got {_json_type_name(obj)}")
        return None
    # A row is shown back in previews and fed to a tokenizer: neither can carry a NUL or a lone surrogate.
    invalid = next(invalid_string_paths(obj), None) if INVALID_JSON_ESCAPE.search(raw) else None
    if invalid is not None:
        result.add_error(line_number, invalid or None, INVALID_CHAR_MESSAGE)
        return None
    return obj


def _json_type_name(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null")


def _accepted_formats() -> str:
    return "; ".join(f"{fmt.value} ({', '.join(sorted(keys))})" for fmt, keys in SIGNATURE_KEYS)


def _undetectable_message(obj: dict[str, Any]) -> str:
    keys = ", ".join(sorted(obj)) or "none"
    return f"cannot tell the format from this row's keys ({keys}); accepted formats and their keys: {_accepted_formats()}"


def _check_declared_format(
    line_number: int, obj: dict[str, Any], declared: DatasetFormat, result: ValidatedDataset
) -> None:
    # The row errors that follow would only say "field required"; this says why.
    looks_like = detect_format(obj)
    if looks_like is not None and looks_like != declared:
        result.add_error(
            line_number, None, f"the format was declared as {declared.value} but the rows look like {looks_like.value}"
        )


def _character_length(row: Row) -> int:
    """Characters of the longest sequence the row trains on: what decides truncation at a max length."""
    match row:
        case TextRow():
            return len(row.text)
        case InstructionRow():
            return len(instruction_prompt(row.instruction, row.input)) + len(row.output)
        case ChatRow():
            return sum(len(message.content) for message in row.messages)
        case PreferenceRow():
            return len(row.prompt) + max(len(row.chosen), len(row.rejected))
        case FeedbackRow():
            return len(row.prompt) + len(row.completion)
        case PromptRow():
            return len(row.prompt)


def length_stats(lengths: Sequence[int], max_length: int | None = None) -> LengthStats:
    """min/mean/p50/p95/max (nearest-rank percentiles) of a non-empty list of lengths."""
    ordered = sorted(lengths)
    count = len(ordered)

    def percentile(p: int) -> int:
        return ordered[max(math.ceil(p / 100 * count) - 1, 0)]

    return LengthStats(
        count=count,
        min=ordered[0],
        mean=round(sum(ordered) / count, 1),
        p50=percentile(50),
        p95=percentile(95),
        max=ordered[-1],
        over_max_length=None if max_length is None else count - bisect.bisect_right(ordered, max_length),
    )


# ---------------------------------------------------------------- storage


def upload_too_large(settings: Settings) -> AppError:
    return AppError(
        "PAYLOAD_TOO_LARGE",
        f"the upload is larger than the limit of {_human_bytes(settings.upload_max_bytes)} (TUNELAB_UPLOAD_MAX_BYTES)",
        {"limit_bytes": settings.upload_max_bytes},
    )


def create_dataset(
    session: Session,
    settings: Settings,
    name: str | None,
    filename: str | None,
    data: bytes,
    declared_format: DatasetFormat | None,
    project_id: int,
    actor: Actor = SYSTEM,
) -> Dataset:
    """Validate an upload and store it; `name` defaults to the file name's stem. A file named *.csv is CSV, stored as
    the JSONL it converts to (which training reads); any other is JSONL. Flushes, never commits."""
    if len(data) > settings.upload_max_bytes:
        raise upload_too_large(settings)
    if (filename or "").lower().endswith(CSV_SUFFIX):
        data, validated = validate_csv(data, declared_format)
    else:
        validated = validate_jsonl(data, declared_format)
    if not validated.is_valid:
        raise AppError(
            "DATASET_INVALID",
            validated.summary(),
            {"errors": validated.errors, "more_errors": validated.error_count - len(validated.errors)},
        )
    name = (name or "").strip() or Path(filename or "dataset").stem[:MAX_NAME_LENGTH]
    existing = session.scalar(
        select(Dataset).where(
            Dataset.project_id == project_id,
            Dataset.name == name,
            Dataset.content_hash == validated.content_hash,
            Dataset.format == validated.format,
            Dataset.bundled.is_(False),
        )
    )
    if existing is not None:
        return existing
    dataset = _store(session, settings, project_id, name, data, validated, bundled=False)
    audit.record(session, project_id, actor, "dataset.upload", "dataset", dataset.id,
                 f"{actor.label} uploaded dataset {name!r} ({validated.row_count} {validated.format} rows)")
    return dataset


def register_bundled_dataset(
    session: Session, settings: Settings, name: str, path: Path, fmt: DatasetFormat | str
) -> Dataset:
    """Register a sample dataset shipped with Tunelab, copying it into the dataset dir; idempotent, for start-up."""
    fmt = DatasetFormat(fmt)  # asset descriptors may carry the plain string
    data = path.read_bytes()
    content_hash = hashlib.sha256(data).hexdigest()
    existing = session.scalar(select(Dataset).where(Dataset.content_hash == content_hash, Dataset.bundled.is_(True)))
    if existing is not None:
        _write_content_addressed(session, settings, content_hash, data)  # the data dir may have been emptied
        return existing
    validated = validate_jsonl(data, fmt)
    if not validated.is_valid:
        raise AppError("DATASET_INVALID", f"bundled dataset {path}: {validated.summary()}", {"errors": validated.errors})
    return _store(session, settings, default_project_id(session), name, data, validated, bundled=True)


def _store(
    session: Session,
    settings: Settings,
    project_id: int,
    name: str,
    data: bytes,
    validated: ValidatedDataset,
    bundled: bool,
) -> Dataset:
    assert validated.char_stats is not None, "only a valid upload is stored"
    relative_path = _write_content_addressed(session, settings, validated.content_hash, data)
    dataset = Dataset(
        project_id=project_id,
        name=name,
        format=validated.format,
        path=relative_path,
        content_hash=validated.content_hash,
        size_bytes=validated.size_bytes,
        row_count=validated.row_count,
        split_seed=split_seed_for(validated.content_hash),
        stats={"chars": validated.char_stats.model_dump()},
        bundled=bundled,
    )
    session.add(dataset)
    # Flush here so that a failing insert surfaces now and the file written for it is removed with the rollback.
    session.flush()
    return dataset


def split_seed_for(content_hash: str) -> int:
    """The eval-split seed of a dataset with these bytes: fixed by its content, so the same file splits alike."""
    return int(content_hash[:7], 16)  # 28 bits: fits the Integer column


def _write_content_addressed(session: Session, settings: Settings, content_hash: str, data: bytes) -> str:
    """Store data as <hash>.jsonl unless the store holds it already; what this stores goes away if the session rolls
    back."""
    relative_path = f"{content_hash}.jsonl"
    key = dataset_key(relative_path)
    store = get_store(settings)
    local = store.local_path(key)
    if (local.exists() if local is not None else store.size(key) is not None):
        return relative_path
    # Written to this machine's disk first (the store's own folder, or the cache a worker would fetch it into), with
    # a temp file and an atomic rename: a reader never sees a half-written dataset.
    target = local if local is not None else settings.cache_dir / "store" / key
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{content_hash}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    session.info.setdefault(_NEW_FILES_KEY, []).append((settings, key, target))
    if local is None:
        store.put_file(key, target)
    return relative_path


@event.listens_for(Session, "after_commit")
def _keep_new_files(session: Session) -> None:
    session.info.pop(_NEW_FILES_KEY, None)


@event.listens_for(Session, "after_transaction_end")
def _remove_uncommitted_files(session: Session, transaction: SessionTransaction) -> None:
    # Runs after after_commit, so anything still listed belongs to a transaction that rolled back or was closed.
    if transaction.parent is not None:
        return
    for settings, key, path in session.info.pop(_NEW_FILES_KEY, ()):
        try:
            path.unlink(missing_ok=True)
            get_store(settings).delete([key])
        except (OSError, AppError):
            log.warning("could not remove uncommitted dataset file %s", key, exc_info=True)


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.4g} {unit}"
        value /= 1024
    return f"{value:.4g} GiB"


# ---------------------------------------------------------------- reading


# A refusal names at most this many of the runs and studies that use a dataset, then says how many more.
USERS_NAMED = 5


def _named(kind: str, names: list[str]) -> str:
    shown = ", ".join(names[:USERS_NAMED])
    more = f" and {len(names) - USERS_NAMED} more" if len(names) > USERS_NAMED else ""
    return f"{len(names)} {kind}{'s' if len(names) != 1 else ''} ({shown}{more})"


def delete_dataset_for(session: Session, settings: Settings, dataset: Dataset, actor: Actor) -> None:
    """A user deletes a dataset: refused while a run trained on it or a study makes runs from it (a run's config and
    the cost table's eval split name it, and resuming or extending would need its rows); the samples that ship with
    Tunelab are every user's and stay."""
    if dataset.bundled:
        raise AppError("DATASET_BUNDLED", f"{dataset.name} is a sample dataset that ships with Tunelab; it cannot be "
                       "deleted", {"dataset_id": dataset.id})
    runs = session.execute(select(Run.id, Run.name).where(Run.dataset_id == dataset.id).order_by(Run.id)).all()
    studies = [study for study in session.scalars(select(Study).where(Study.project_id == dataset.project_id)
                                                  .order_by(Study.id))
               if study.spec.get("dataset_id") == dataset.id]
    if runs or studies:
        users = [_named("run", [f"{run.id} {run.name!r}" for run in runs])] if runs else []
        users += [_named("study", [f"{study.id} {study.name!r}" for study in studies])] if studies else []
        raise AppError("DATASET_IN_USE", f"dataset {dataset.name!r} is used by {' and '.join(users)}; delete them "
                       "first", {"dataset_id": dataset.id, "run_ids": [run.id for run in runs],
                                 "study_ids": [study.id for study in studies]})
    audit.record(session, dataset.project_id, actor, "dataset.delete", "dataset", dataset.id,
                 f"{actor.label} deleted dataset {dataset.name} ({dataset.row_count} rows)")
    delete_dataset(session, settings, dataset)


def delete_dataset(session: Session, settings: Settings, dataset: Dataset) -> None:
    """Remove the row, and the stored file once no other dataset shares its content."""
    path = dataset.path
    session.delete(dataset)
    session.flush()
    if session.scalar(select(func.count()).select_from(Dataset).where(Dataset.path == path)) == 0:
        events.call_after_commit(session, lambda: _remove_stored(settings, path))


@dataclass(frozen=True)
class DatasetPage:
    data: list[Dataset]
    count: int
    next_cursor: str | None


def _visible(project_ids: list[int]) -> ColumnElement[bool]:
    """The bundled samples, which every project can use, and the datasets of these projects."""
    return or_(Dataset.bundled.is_(True), Dataset.project_id.in_(project_ids))


def list_datasets(session: Session, project_ids: list[int], limit: int, cursor: str | None) -> DatasetPage:
    """Newest first. The cursor is opaque to clients; it is the id of the last dataset on the previous page."""
    query = select(Dataset).where(_visible(project_ids)).order_by(Dataset.id.desc()).limit(limit + 1)
    if cursor is not None:
        query = query.where(Dataset.id < decode_id(cursor))
    rows = list(session.scalars(query))
    count = session.scalar(select(func.count()).select_from(Dataset).where(_visible(project_ids))) or 0
    has_more = len(rows) > limit
    rows = rows[:limit]
    return DatasetPage(data=rows, count=count, next_cursor=encode_id(rows[-1].id) if has_more else None)


def _remove_stored(settings: Settings, path: str) -> None:
    try:
        get_store(settings).delete([dataset_key(path)])
        (settings.cache_dir / "store" / dataset_key(path)).unlink(missing_ok=True)
    except (OSError, AppError):  # the row is gone; an unreferenced file costs only space
        log.warning("could not remove the stored dataset file %s", path, exc_info=True)


def dataset_file(settings: Settings, dataset: Dataset) -> Path:
    """The dataset's file on this machine: the stored file, or its copy fetched from the store by content hash."""
    return cached_file(settings, dataset_key(dataset.path))


# ---------------------------------------------------------------- preview


def preview_dataset(
    settings: Settings, dataset: Dataset, model_path: Path | None, limit: int, max_length: int | None = None,
    offset: int = 0,
) -> DatasetPreviewPublic:
    """`limit` rows from the `offset`-th (0-based) as the model sees them, and length statistics over the whole dataset.

    With a model, rows go through its tokenizer (and chat template, as the SFT objective does) and the token
    statistics cover every row; without one, only the character statistics stored at upload are given."""
    fmt = DatasetFormat(dataset.format)
    path = dataset_file(settings, dataset)
    tokenizer = _load_tokenizer(model_path) if model_path is not None else None
    if tokenizer is not None and fmt != DatasetFormat.text and not tokenizer.chat_template:
        raise AppError(
            "TOKENIZER_UNAVAILABLE",
            f"model: {model_path} has no chat template, which {fmt.value} datasets are trained through",
            {"field": "model"},
        )
    rows = [_render(line_number, row, tokenizer) for line_number, row in islice(_read_rows(path, fmt), offset, offset + limit)]
    token_stats = truncation = None
    if model_path is not None:
        lengths = _token_lengths(path, fmt, model_path)
        longest: Sequence[int] = lengths
        by_row: Sequence[RowLengths] = lengths
        if fmt == DatasetFormat.preference:  # two sequences a row: prompt + chosen, prompt + rejected
            pairs = [lengths[i : i + 2] for i in range(0, len(lengths), 2)]
            longest, by_row = [max(pair) for pair in pairs], pairs
        token_stats = length_stats(longest, max_length)
        if max_length is not None:
            counted = count_truncation(by_row, max_length)
            truncation = TruncationPublic(max_length=max_length, rows=counted.rows,
                                          truncated_rows=counted.truncated_rows,
                                          truncated_tokens=counted.truncated_tokens)
    chars = (dataset.stats or {}).get("chars")
    return DatasetPreviewPublic(
        dataset_id=dataset.id,
        format=fmt,
        model=str(model_path) if model_path is not None else None,
        rows=rows,
        offset=offset,
        total_rows=dataset.row_count,
        char_stats=LengthStats.model_validate(chars) if chars else None,
        token_stats=token_stats,
        truncation=truncation,
    )


def _read_rows(path: Path, fmt: DatasetFormat) -> Iterator[tuple[int, Row]]:
    """Rows of a stored (so already validated) dataset file, with their line numbers."""
    row_model = ROW_MODELS[fmt]
    with path.open("rb") as lines:
        for line_number, raw in _nonblank_lines(lines):
            yield line_number, row_model.model_validate(json.loads(raw))


def _render(line_number: int, row: Row, tokenizer: "PreTrainedTokenizerBase | None") -> RenderedRow:
    raw = row.model_dump()
    match row:
        case TextRow():
            return RenderedRow(line=line_number, raw=raw, text=row.text)
        case InstructionRow():
            prompt, completion = _instruction_prompt_and_completion(row, tokenizer)
            return RenderedRow(line=line_number, raw=raw, prompt=prompt, completion=completion)
        case ChatRow():
            text = _apply_chat_template(tokenizer, _chat_messages(row)) if tokenizer is not None else None
            return RenderedRow(line=line_number, raw=raw, text=text)
        case PreferenceRow():
            return RenderedRow(line=line_number, raw=raw, prompt=row.prompt, completion=row.chosen, rejected=row.rejected)
        case FeedbackRow():
            return RenderedRow(line=line_number, raw=raw, prompt=row.prompt, completion=row.completion, label=row.label)
        case PromptRow():
            answer = None if row.answer is None else str(row.answer)
            return RenderedRow(line=line_number, raw=raw, prompt=row.prompt, completion=answer)


def _instruction_prompt_and_completion(row: InstructionRow,
                                       tokenizer: "PreTrainedTokenizerBase | None") -> tuple[str, str]:
    user_turn = {"role": "user", "content": instruction_prompt(row.instruction, row.input)}
    if tokenizer is None:
        return user_turn["content"], row.output
    prompt = _apply_chat_template(tokenizer, [user_turn], add_generation_prompt=True)
    full = _apply_chat_template(tokenizer, [user_turn, {"role": "assistant", "content": row.output}])
    # TRL splits the same way; a template whose prompt is not a prefix of the chat gets the raw answer shown.
    return prompt, full[len(prompt):] if full.startswith(prompt) else row.output


def _chat_messages(row: ChatRow) -> list[dict[str, str]]:
    return [message.model_dump() for message in row.messages]


def _apply_chat_template(tokenizer: "PreTrainedTokenizerBase", messages: list[dict[str, str]],
                         add_generation_prompt: bool = False) -> str:
    # With tokenize=False the template renders one string; the declared return type covers every mode.
    return cast(str, tokenizer.apply_chat_template(messages, tokenize=False,
                                                   add_generation_prompt=add_generation_prompt))


def sequence_token_lengths(settings: Settings, dataset: Dataset, model_path: Path) -> Sequence[int]:
    """The token length of every sequence the trainer builds from the dataset with this model's tokenizer, row after
    row (a preference row gives two: prompt + chosen, prompt + rejected)."""
    return _token_lengths(dataset_file(settings, dataset), DatasetFormat(dataset.format), model_path)


@lru_cache(maxsize=8)
def _token_lengths(path: Path, fmt: DatasetFormat, model_path: Path) -> array:
    """Token length of every sequence the trainer cuts at max_length, row after row, as it tokenizes them (SFT rows
    as TRL's SFTTrainer does; preference pairs as its DPOTrainer does, prompt + chosen then prompt + rejected), so
    that the truncation counted here is what it cuts. Cached: the file is content-addressed, so it never changes."""
    tokenizer = _load_tokenizer(model_path)
    lengths = array("I")  # 4 bytes a sequence: the cache may hold a few large datasets
    rows = _read_rows(path, fmt)
    while batch := list(islice(rows, TOKENIZE_BATCH_ROWS)):
        dumped = [row.model_dump() for _, row in batch]
        if fmt == DatasetFormat.preference:
            for pair in preference_sequence_lengths(preference_records(dumped), tokenizer):
                lengths.extend(pair)
        elif fmt == DatasetFormat.feedback:  # prompt + completion, as KTO's trainer tokenizes it
            lengths.extend(sft_sequence_lengths(feedback_records(dumped), tokenizer))
        elif fmt == DatasetFormat.prompt:  # the prompt as the model continues it; online RL writes the rest
            lengths.extend(online_rl.prompt_lengths(online_rl.prompt_records(dumped, fmt, "preview"), tokenizer))
        else:
            lengths.extend(sft_sequence_lengths(sft_records(dumped, fmt), tokenizer))
    return lengths


@lru_cache(maxsize=4)
def _load_tokenizer(model_path: Path) -> "PreTrainedTokenizerBase":
    """A local model's tokenizer, as training loads it (a GGUF's from its metadata); never reaches the hub."""
    try:
        return load_tokenizer(str(model_path))
    except (OSError, ValueError) as exc:
        raise AppError(
            "TOKENIZER_UNAVAILABLE", f"model: cannot load a tokenizer from {model_path}: {exc}", {"field": "model"}
        ) from exc
