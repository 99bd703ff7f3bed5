"""The index of files a run wrote, and safe access to them."""

from pathlib import Path

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
               "train.log": "log", "trainer_log.jsonl": "log", "config.json": "config", "samples.jsonl": "samples"}


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
