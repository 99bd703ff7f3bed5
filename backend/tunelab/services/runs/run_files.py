"""A run's files between the folder a worker writes them in and the artifact store the API and other workers read.

With the local store the folder is the store and there is nothing to move. With S3: the log and samples are
uploaded while the run trains (publish with `live_only`), each checkpoint once it is complete (the store keeps the
checkpoints the folder keeps: the trainer's rotation deletes the oldest, and so does this), everything else when the
run ends; a run resumed on another host pulls what the store has first. A manifest in the folder remembers the size
and modification time of each file as last uploaded or pulled, so an unchanged file is never sent twice."""

import json
import logging
from pathlib import Path

from tunelab.core.settings import Settings
from tunelab.core.store import get_store, run_key
from tunelab.core.store_cache import cached_folder
from tunelab.services.runs import artifacts
from tunelab.training.checkpoints import CHECKPOINT_PREFIX, CHECKPOINTS_DIR, latest_checkpoint

log = logging.getLogger(__name__)
MANIFEST = ".store-manifest.json"
# Read by the API while the run trains: sent at every sync, not only at the end.
LIVE_FILES = ("train.log", "trainer_log.jsonl", "samples.jsonl", "rl_samples.jsonl", "predictions.jsonl")


def _stamp(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_size, status.st_mtime_ns]


def _manifest(folder: Path) -> dict[str, list[int]]:
    try:
        return dict(json.loads((folder / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def _save_manifest(folder: Path, manifest: dict[str, list[int]]) -> None:
    temp = folder / f"{MANIFEST}.tmp"
    temp.write_text(json.dumps(manifest), encoding="utf-8")
    temp.replace(folder / MANIFEST)


def _is_checkpoint_file(relative: str) -> bool:
    return relative.startswith(f"{CHECKPOINTS_DIR}/")


def publish(settings: Settings, run_id: int, folder: Path, live_only: bool = False) -> int:
    """Upload the folder's new and changed files (the live ones only, or all but checkpoints, which sync_checkpoints
    sends); returns how many went. Raises STORE_UNAVAILABLE when the store does not take them."""
    store = get_store(settings)
    if store.local_path(run_key(run_id)) is not None or not folder.is_dir():
        return 0
    manifest = _manifest(folder)
    candidates = ([folder / name for name in LIVE_FILES] if live_only
                  else sorted(p for p in folder.rglob("*") if p.is_file()))
    sent = 0
    for path in candidates:
        if not path.is_file() or path.name.startswith(".") or path.name.endswith(".part"):
            continue
        relative = path.relative_to(folder).as_posix()
        if _is_checkpoint_file(relative) or manifest.get(relative) == (stamp := _stamp(path)):
            continue
        store.put_file(run_key(run_id, relative), path)
        manifest[relative] = stamp
        sent += 1
    if sent:
        _save_manifest(folder, manifest)
    if not live_only:
        sync_checkpoints(settings, run_id, folder)
    return sent


def sync_checkpoints(settings: Settings, run_id: int, folder: Path) -> None:
    """Make the store's checkpoints those complete in the folder: upload each new one (its trainer_state.json last,
    as the trainer writes it last, so a checkpoint cut short in the store is passed over by a resume as one cut short
    on disk), then delete those the folder no longer keeps."""
    store = get_store(settings)
    if store.local_path(run_key(run_id)) is not None:
        return
    checkpoints = folder / CHECKPOINTS_DIR
    complete = [path for path in sorted(checkpoints.glob(f"{CHECKPOINT_PREFIX}*")) if
                (path / "trainer_state.json").is_file()] if checkpoints.is_dir() else []
    stored = store.listing(run_key(run_id, f"{CHECKPOINTS_DIR}/"))
    stored_names = {item.key.removeprefix(run_key(run_id, f"{CHECKPOINTS_DIR}/")).split("/", 1)[0] for item in stored}
    manifest = _manifest(folder)
    for checkpoint in complete:
        if checkpoint.name in stored_names and any(
                key.startswith(f"{CHECKPOINTS_DIR}/{checkpoint.name}/") for key in manifest):
            continue
        files = sorted((p for p in checkpoint.rglob("*") if p.is_file()), key=lambda p: p.name == "trainer_state.json")
        for path in files:
            relative = path.relative_to(folder).as_posix()
            store.put_file(run_key(run_id, relative), path)
            manifest[relative] = _stamp(path)
        log.info("run %s: %s uploaded to the artifact store", run_id, checkpoint.name)
    kept = {path.name for path in complete}
    dropped = [item.key for item in stored
               if item.key.removeprefix(run_key(run_id, f"{CHECKPOINTS_DIR}/")).split("/", 1)[0] not in kept]
    if dropped and complete:
        store.delete(dropped)
        manifest = {key: value for key, value in manifest.items()
                    if not _is_checkpoint_file(key) or key.split("/")[1] in kept}
    _save_manifest(folder, manifest)


def run_folder(settings: Settings, run_id: int, top: str) -> Path:
    """One folder of a run's stored files (its weights, its tokenizer) on this machine, fetched into the cache when
    the store is elsewhere."""
    try:
        return cached_folder(settings, run_key(run_id, f"{top}/"))
    except FileNotFoundError:
        return artifacts.run_dir(settings, run_id) / top  # not stored: the loader then says which files it lacks


def pull(settings: Settings, run_id: int, folder: Path, only: tuple[str, ...] | None = None) -> int:
    """Fetch what the store holds of the run and the folder lacks (a run resumed on a host other than the one that
    checkpointed it): every file, or those under the top-level names `only`, but the checkpoints before the newest
    complete one. Returns how many came."""
    store = get_store(settings)
    if store.local_path(run_key(run_id)) is not None:
        return 0
    prefix = run_key(run_id)
    stored = store.listing(prefix)
    checkpoint_names = {item.key.removeprefix(prefix).split("/")[1] for item in stored
                        if _is_checkpoint_file(item.key.removeprefix(prefix))}
    complete = {name for name in checkpoint_names if any(
        item.key == f"{prefix}{CHECKPOINTS_DIR}/{name}/trainer_state.json" for item in stored)}
    newest = max(complete, key=lambda name: int(name.removeprefix(CHECKPOINT_PREFIX)), default=None)
    manifest = _manifest(folder)
    came = 0
    for item in stored:
        relative = item.key.removeprefix(prefix)
        if _is_checkpoint_file(relative) and relative.split("/")[1] != newest:
            continue
        if only is not None and relative.split("/", 1)[0] not in only:
            continue
        target = folder / relative
        if target.is_file() and target.stat().st_size == item.size:
            continue
        store.get_file(item.key, target)
        manifest[relative] = _stamp(target)
        came += 1
    folder.mkdir(parents=True, exist_ok=True)
    _save_manifest(folder, manifest)
    if came:
        log.info("run %s: %d files pulled from the artifact store (newest checkpoint: %s)", run_id, came,
                 latest_checkpoint(folder / CHECKPOINTS_DIR))
    return came
