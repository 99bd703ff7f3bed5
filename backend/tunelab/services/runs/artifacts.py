"""The index of files a run wrote to the store, and safe access to them: one file, or one folder as a zip."""

import logging
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.core.store import ArtifactStore, get_store, run_key
from tunelab.db.models import Artifact

log = logging.getLogger(__name__)
RUN_LOG_NAME = "train.log"  # the training process's log, in the run's folder


def run_dir(settings: Settings, run_id: int) -> Path:
    """This machine's folder of the run: where its training writes, and where a process reads the run's files from
    the store. With the local store it is the stored folder itself; with S3 it is a working copy in the cache, whose
    files run_files uploads."""
    local = get_store(settings).local_path(run_key(run_id))
    return local if local is not None else settings.cache_dir / "runs" / str(run_id)


# Top-level entry of a run folder -> the kind shown to users.
KIND_BY_TOP = {"adapter": "adapter", "model": "model", "tokenizer": "tokenizer", "checkpoints": "checkpoint",
               "train.log": "log", "trainer_log.jsonl": "log", "config.json": "config", "samples.jsonl": "samples",
               "predictions.jsonl": "predictions",
               "merged": "merged_model"}

# The folders a run's page offers as one zip: the adapter of a PEFT run, the model of a full fine-tuning run, and
# the merged model of an export.
ArchiveFolder = Literal["adapter", "model", "merged"]
ARCHIVE_FOLDERS: tuple[ArchiveFolder, ...] = ("adapter", "model", "merged")
UNCOMPRESSED_SUFFIXES = frozenset({".safetensors", ".bin", ".pt"})  # weights: deflate gains little and costs much
ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # every member's: a zip of the same files is the same bytes
ZIP64_LIMIT = zipfile.ZIP64_LIMIT


def index_run_artifacts(session: Session, settings: Settings, run_id: int) -> list[Artifact]:
    """Replace the run's artifact index with what the store holds for it now."""
    session.execute(delete(Artifact).where(Artifact.run_id == run_id))
    prefix = run_key(run_id)
    found = []
    for stored in get_store(settings).listing(prefix):
        relative = stored.key.removeprefix(prefix)
        kind = KIND_BY_TOP.get(relative.split("/", 1)[0], "file")
        found.append(Artifact(run_id=run_id, path=relative, kind=kind, size_bytes=stored.size))
    session.add_all(found)
    session.flush()
    return found


def remove_run_files(settings: Settings, run_id: int) -> None:
    """A deleted run's files: in the store, and this machine's working copy and cached copies of them."""
    try:
        get_store(settings).delete_prefix(run_key(run_id))
    except AppError:  # the run is gone; its files cost only space, and the operator's log says which
        log.warning("run %s: could not remove its files from the artifact store", run_id, exc_info=True)
    for folder in (settings.cache_dir / "runs" / str(run_id), settings.cache_dir / "store" / run_key(run_id)):
        shutil.rmtree(folder, ignore_errors=True)


def list_artifacts(session: Session, run_id: int) -> list[Artifact]:
    return list(session.scalars(select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.path)))


def has_file(settings: Settings, run_id: int, relative: str) -> bool:
    """Whether the store holds the run's file (asked of the store: a worker may have stored it a moment ago)."""
    return get_store(settings).size(run_key(run_id, relative)) is not None


def has_folder(settings: Settings, run_id: int, top: str) -> bool:
    return bool(get_store(settings).listing(run_key(run_id, f"{top}/")))


def read_run_text(settings: Settings, run_id: int, relative: str) -> str:
    """A small text file of the run (samples, predictions), as the store holds it now; empty when it holds none."""
    store = get_store(settings)
    key = run_key(run_id, relative)
    try:
        return b"".join(store.read_chunks(key)).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


@dataclass(frozen=True)
class StoredArtifact:
    key: str  # in the store
    name: str  # the file's own name
    size: int


def artifact_file(session: Session, run_id: int, relative: str) -> StoredArtifact:
    """The stored file behind an artifact path; refuses anything outside the run's folder or not in its index."""
    parts = PurePosixPath(relative).parts
    if not parts or relative.startswith("/") or any(part in {"..", "."} for part in parts) or "\\" in relative:
        raise AppError("INVALID_PATH", "path: outside the run's artifacts", {"field": "path"})
    size = session.scalar(select(Artifact.size_bytes).where(Artifact.run_id == run_id, Artifact.path == relative))
    if size is None:
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run_id} has no artifact {relative!r}", {"path": relative})
    return StoredArtifact(run_key(run_id, relative), parts[-1], size)


def archive_folders(session: Session, run_id: int) -> list[ArchiveFolder]:
    """The archivable folders the run's index holds."""
    tops = {path.split("/", 1)[0] for path in session.scalars(select(Artifact.path).where(Artifact.run_id == run_id))}
    return [folder for folder in ARCHIVE_FOLDERS if folder in tops]


def archive_members(session: Session, run_id: int, folder: ArchiveFolder) -> list[tuple[str, StoredArtifact]]:
    """(name in the zip, stored file) for one artifact folder: its files at the zip's top level, so that the unpacked
    zip is what `from_pretrained` takes, with the run's tokenizer files beside them where the folder has none of its
    own (an adapter's zip is then all a user needs besides the base)."""
    members = _indexed_files(session, run_id, folder)
    if not members:
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run_id} has no {folder}/ artifacts", {"path": folder})
    for name, file in _indexed_files(session, run_id, "tokenizer").items():
        members.setdefault(name, file)
    return sorted(members.items())


def _indexed_files(session: Session, run_id: int, top: str) -> dict[str, StoredArtifact]:
    """Name under `top`/ -> stored file, for the indexed files of one folder."""
    prefix = f"{top}/"
    rows = session.execute(select(Artifact.path, Artifact.size_bytes).where(
        Artifact.run_id == run_id, Artifact.path.startswith(prefix, autoescape=True)))
    return {path.removeprefix(prefix): StoredArtifact(run_key(run_id, path), PurePosixPath(path).name, size)
            for path, size in rows}


class _Chunks:
    """A write-only, unseekable file for zipfile (which then writes each member's sizes after its data) that hands
    out what was written since the last take."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


def stream_zip(store: ArtifactStore, members: list[tuple[str, StoredArtifact]]) -> Iterator[bytes]:
    """The zip of `members`, produced as it is sent: nothing is written to disk, and memory holds one chunk."""
    out = _Chunks()
    with zipfile.ZipFile(out, "w") as archive:
        for name, file in members:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.file_size = file.size
            info.compress_type = (zipfile.ZIP_STORED if PurePosixPath(name).suffix in UNCOMPRESSED_SUFFIXES
                                  else zipfile.ZIP_DEFLATED)
            with archive.open(info, "w", force_zip64=file.size >= ZIP64_LIMIT) as target:
                for chunk in store.read_chunks(file.key):
                    target.write(chunk)
                    yield out.take()
    yield out.take()
