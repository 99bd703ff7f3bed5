"""A run that failed because its disk filled up says so, in words a user can act on, instead of the writer's own
error: torch's checkpoint writer reports a full disk as `RuntimeError: basic_ios::clear: iostream error` and
safetensors as `SafetensorError: … StorageFull`, neither naming the cause or the folder. The partial checkpoint the
failure leaves is removed, so the folder holds only complete checkpoints and a resume starts from the newest."""

import errno
import shutil
from pathlib import Path

from tunelab.training.checkpoints import CHECKPOINT_PREFIX, CHECKPOINTS_DIR

# How the writers a run uses word a write that found no room, when they do not raise OSError(ENOSPC) itself:
# safetensors (Rust's io::Error), torch.save's C++ stream and its zip writer.
_NO_SPACE_WORDS = ("no space left on device", "storagefull", "os error 28", "disk quota exceeded")
_OPAQUE_WRITE_WORDS = ("iostream error", "pytorchstreamwriter failed", "file write failed", "unexpected pos")
# An opaque write error is taken for a full disk when its filesystem has less free room than this left: a disk that
# filled up has next to nothing free while the partial file is still there.
NEARLY_FULL_BYTES = 64 * 1024 * 1024


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _free_bytes(folder: Path) -> int | None:
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def is_disk_full(exc: BaseException, output_dir: Path) -> bool:
    """Whether `exc` is a write that failed for want of room on `output_dir`'s filesystem."""
    for error in _chain(exc):
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        words = str(error).lower()
        if any(word in words for word in _NO_SPACE_WORDS):
            return True
        if any(word in words for word in _OPAQUE_WRITE_WORDS):
            free = _free_bytes(output_dir)
            if free is not None and free < NEARLY_FULL_BYTES:
                return True
    return False


def remove_incomplete_checkpoints(output_dir: Path) -> list[str]:
    """Remove the checkpoints a failed save left half-written (the trainer writes trainer_state.json last); returns
    their paths relative to `output_dir`."""
    folder = output_dir / CHECKPOINTS_DIR
    removed = []
    for candidate in sorted(folder.glob(f"{CHECKPOINT_PREFIX}*")) if folder.is_dir() else ():
        if candidate.is_dir() and not (candidate / "trainer_state.json").is_file():
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate.relative_to(output_dir).as_posix())
    return removed


def disk_full_reason(output_dir: Path, removed: list[str]) -> str:
    """The run's failure reason for a full disk. The folder is named relative to the run's artifacts: a status reason
    is shown to every reader of the run, and a server path is no business of theirs."""
    where = f"{removed[-1]} of the run's artifacts" if removed else "the run's artifacts"
    partial = "; the partial checkpoint was removed" if removed else ""
    return (f"no space left on device while writing {where} (under TUNELAB_ARTIFACT_DIR){partial}. "
            f"Free some space, then resume the run: it continues from its last complete checkpoint")
