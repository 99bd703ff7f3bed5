"""This machine's copies of stored files (datasets by content hash, a run's weights), fetched from an S3 store once and
kept while they are used: bounded by TUNELAB_CACHE_MAX_GB, the least recently used evicted first. With the local
store there is nothing to copy, and every call answers the stored file itself."""

import logging
import os
import shutil
import time
from pathlib import Path

from tunelab.core.settings import Settings
from tunelab.core.store import get_store

log = logging.getLogger(__name__)
COMPLETE = ".complete"  # written last in a fetched folder: a folder without it is a fetch cut short


def _cache_root(settings: Settings) -> Path:
    return settings.cache_dir / "store"


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def cached_file(settings: Settings, key: str) -> Path:
    """A local copy of one stored file (FileNotFoundError when the store has none)."""
    store = get_store(settings)
    local = store.local_path(key)
    if local is not None:
        return local
    target = _cache_root(settings) / key
    if target.is_file():
        _touch(target)
        return target
    if store.size(key) is None:
        raise FileNotFoundError(f"the artifact store holds no {key}")
    store.get_file(key, target)
    evict(settings, keep=target)
    return target


def cached_folder(settings: Settings, prefix: str) -> Path:
    """A local copy of every stored file under `prefix` (a folder key ending with '/'); FileNotFoundError when the
    store holds none. Stored folders are written once (a run's weights), so a complete copy stays valid."""
    store = get_store(settings)
    local = store.local_path(prefix)
    if local is not None:
        return local
    target = _cache_root(settings) / prefix.rstrip("/")
    if (target / COMPLETE).is_file():
        _touch(target / COMPLETE)
        return target
    objects = store.listing(prefix)
    if not objects:
        raise FileNotFoundError(f"the artifact store holds nothing under {prefix}")
    # Fetched beside the target and renamed whole: another process of this machine never sees half a folder.
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    shutil.rmtree(partial, ignore_errors=True)
    for stored in objects:
        store.get_file(stored.key, partial / stored.key.removeprefix(prefix))
    (partial / COMPLETE).touch()
    shutil.rmtree(target, ignore_errors=True)
    try:
        partial.rename(target)
    except OSError:  # another process renamed its copy first: use that one
        shutil.rmtree(partial, ignore_errors=True)
    evict(settings, keep=target)
    return target


def _entries(root: Path) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of each cached file or fetched folder."""
    found = []
    for path in root.rglob("*"):
        if path.name == COMPLETE:
            folder = path.parent
            size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            found.append((path.stat().st_mtime, size, folder))
        elif path.is_file() and not any((parent / COMPLETE).exists() for parent in path.parents if parent != root):
            if not path.name.endswith(".part") and not path.name.startswith("."):
                found.append((path.stat().st_mtime, path.stat().st_size, path))
    return found


def evict(settings: Settings, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used copies until the cache is within its bound; never `keep` (just fetched)."""
    root = _cache_root(settings)
    if not root.is_dir():
        return []
    entries = sorted(_entries(root))
    total = sum(size for _, size, _ in entries)
    limit = int(settings.cache_max_gb * 1024**3)
    removed = []
    for _, size, path in entries:
        if total <= limit:
            break
        if keep is not None and (path == keep or keep.is_relative_to(path)):
            continue
        if path.is_dir():
            # Renamed away first, so a process that looks at it now fetches it again rather than read a folder
            # half removed.
            doomed = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.evicted")
            path.rename(doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
        log.info("cache: evicted %s (%d bytes) to stay within %s GB", path, size, settings.cache_max_gb)
    return removed
