"""The index of files a run wrote, and safe access to them: one file, or one folder as a zip."""

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.models import Artifact

RUN_LOG_NAME = "train.log"  # the training process's log, in the run's folder


def run_dir(settings: Settings, run_id: int) -> Path:
    """The run's artifact folder: everything its training writes."""
    return settings.artifact_dir / str(run_id)


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
ZIP_CHUNK_BYTES = 1 << 20


def index_run_artifacts(session: Session, run_id: int, folder: Path) -> list[Artifact]:
    """Replace the run's artifact index with what is on disk now."""
    session.execute(delete(Artifact).where(Artifact.run_id == run_id))
    found = []
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            relative = path.relative_to(folder).as_posix()
            kind = KIND_BY_TOP.get(relative.split("/", 1)[0], "file")
            found.append(Artifact(run_id=run_id, path=relative, kind=kind, size_bytes=path.stat().st_size))
    session.add_all(found)
    session.flush()
    return found


def list_artifacts(session: Session, run_id: int) -> list[Artifact]:
    return list(session.scalars(select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.path)))


def artifact_file(session: Session, settings: Settings, run_id: int, relative: str) -> Path:
    """The file behind an artifact path; refuses anything outside the run's folder or not in its index."""
    root = run_dir(settings, run_id).resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root) or candidate == root:
        raise AppError("INVALID_PATH", "path: outside the run's artifacts", {"field": "path"})
    known = session.scalar(select(Artifact.id).where(Artifact.run_id == run_id, Artifact.path == relative))
    if known is None or not candidate.is_file():
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run_id} has no artifact {relative!r}", {"path": relative})
    return candidate


def archive_folders(session: Session, run_id: int) -> list[ArchiveFolder]:
    """The archivable folders the run's index holds."""
    tops = {path.split("/", 1)[0] for path in session.scalars(select(Artifact.path).where(Artifact.run_id == run_id))}
    return [folder for folder in ARCHIVE_FOLDERS if folder in tops]


def archive_members(session: Session, settings: Settings, run_id: int, folder: ArchiveFolder) -> list[tuple[str, Path]]:
    """(name in the zip, file) for one artifact folder: its files at the zip's top level, so that the unpacked zip is
    what `from_pretrained` takes, with the run's tokenizer files beside them where the folder has none of its own
    (an adapter's zip is then all a user needs besides the base)."""
    members = _indexed_files(session, settings, run_id, folder)
    if not members:
        raise AppError("ARTIFACT_NOT_FOUND", f"run {run_id} has no {folder}/ artifacts", {"path": folder})
    for name, file in _indexed_files(session, settings, run_id, "tokenizer").items():
        members.setdefault(name, file)
    return sorted(members.items())


def _indexed_files(session: Session, settings: Settings, run_id: int, top: str) -> dict[str, Path]:
    """Name under `top`/ -> file, for the indexed files of one folder that are on disk inside the run's folder."""
    root = run_dir(settings, run_id).resolve()
    prefix = f"{top}/"
    found = {}
    for relative in session.scalars(select(Artifact.path).where(Artifact.run_id == run_id,
                                                                Artifact.path.startswith(prefix, autoescape=True))):
        file = (root / relative).resolve()
        if file.is_relative_to(root) and file.is_file():
            found[relative.removeprefix(prefix)] = file
    return found


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


def stream_zip(members: list[tuple[str, Path]]) -> Iterator[bytes]:
    """The zip of `members`, produced as it is sent: nothing is written to disk, and memory holds one chunk."""
    out = _Chunks()
    with zipfile.ZipFile(out, "w") as archive:
        for name, file in members:
            info = zipfile.ZipInfo.from_file(file, name)
            info.compress_type = zipfile.ZIP_STORED if file.suffix in UNCOMPRESSED_SUFFIXES else zipfile.ZIP_DEFLATED
            with file.open("rb") as source, archive.open(info, "w") as target:
                while chunk := source.read(ZIP_CHUNK_BYTES):
                    target.write(chunk)
                    yield out.take()
    yield out.take()
