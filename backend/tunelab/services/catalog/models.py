"""Which base models a run may use: the bundled ones, downloaded ones, configured ones, and local paths under the
model roots (TUNELAB_MODEL_ROOTS).

A Hugging Face id is accepted when it is already in the local Hugging Face cache (the worker trains offline). Any
other path is refused with the same answer whether it exists or not, so the API tells nobody what is on its disk."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings


@dataclass(frozen=True)
class ModelEntry:
    name: str
    title: str
    description: str
    source: str  # "bundled" | "package" | "configured"
    path: Path | None
    make_target: str | None = None  # how to make it available when it is not
    # {method: {param: value}} over the method's defaults for runs of this model (the bundled tiny model's demo values)
    param_defaults: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.path is not None and self.path.exists()


def _catalog_entries(settings: Settings) -> list[ModelEntry]:
    from tunelab.assets.build import BUNDLED_MODELS

    return [
        ModelEntry(
            name=m.name,
            title=m.title,
            description=m.description,
            source="bundled" if m.make_target is None else "package",
            path=settings.models_dir / m.path,
            make_target=m.make_target,
            param_defaults=m.param_defaults,
        )
        for m in BUNDLED_MODELS
    ]


def model_param_defaults(settings: Settings, model: str, method: str) -> dict[str, object]:
    """The defaults the catalog model named `model` sets for `method`'s params (none for other models)."""
    entry = next((e for e in _catalog_entries(settings) if e.name == model), None)
    return dict(entry.param_defaults.get(method, {})) if entry is not None else {}


def list_models(settings: Settings) -> list[ModelEntry]:
    entries = _catalog_entries(settings)
    for extra in filter(None, (m.strip() for m in settings.extra_models.split(","))):
        path = Path(extra).expanduser()
        entries.append(
            ModelEntry(
                name=extra,
                title=extra,
                description="Configured with TUNELAB_EXTRA_MODELS",
                source="configured",
                path=path if path.exists() else _hub_cache_path(extra),
            )
        )
    return entries


def _hub_cache_path(model_id: str) -> Path | None:
    """The local snapshot of a hub model id, if one is cached; never downloads."""
    if "/" not in model_id or model_id.startswith(("/", ".")):
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_id, local_files_only=True))
    except Exception:  # noqa: BLE001  (any miss means "not cached here")
        return None


def model_identity(path: Path) -> dict[str, object]:
    """What identifies the base weights a run starts from, cheap enough for every launch: the hub revision when
    the path is a cached snapshot, and a digest of the file names and sizes (plus config.json's bytes). For a GGUF
    base, the digest covers the GGUF alone (not the Hugging Face copy made beside it), with its sha256 and the
    copy its adapters record as their base."""
    import hashlib

    from tunelab.training.base_models import gguf_identity
    from tunelab.training.models import find_gguf

    try:
        gguf = find_gguf(str(path))
    except ValueError:  # several GGUFs in one folder: the load names the problem; the identity covers them all
        gguf = None
    digest = hashlib.sha256()
    if gguf is not None:
        files = [gguf]
    else:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(f"{file.relative_to(path.parent if path.is_file() else path)}:{file.stat().st_size}\n".encode())
        if file.name == "config.json":
            digest.update(file.read_bytes())
    identity: dict[str, object] = {"path": str(path), "files_digest": digest.hexdigest()}
    if gguf is not None:
        identity.update(gguf_identity(gguf))
    if path.parent.name == "snapshots":
        identity["hub_revision"] = path.name
    return identity


def resolve_model_path(settings: Settings, model: str) -> Path:
    """The local path a worker loads `model` from, or MODEL_NOT_FOUND naming the field."""
    for entry in list_models(settings):
        if entry.name == model:
            if entry.path is not None and entry.available:
                return entry.path
            hint = f" Run `make {entry.make_target}` to fetch it." if entry.make_target else ""
            raise AppError("MODEL_NOT_FOUND", f"model: {model!r} is not available on this server.{hint}",
                           {"field": "model"})
    path = _under_model_roots(settings, model)
    if path is not None:
        return path
    cached = _hub_cache_path(model)
    if cached is not None:
        return cached
    raise AppError(
        "MODEL_NOT_FOUND",
        f"model: unknown model {model!r}; use a name from GET /api/v1/models, an absolute path under the model "
        "roots (TUNELAB_MODEL_ROOTS), or a Hugging Face id already in the local cache",
        {"field": "model"},
    )


def worker_model_path(settings: Settings, model: str, launched_path: str) -> Path:
    """Where this worker loads a run's base from: `model` (a catalog name, a hub id or a path under the model roots)
    resolved among its own models, so a worker on another host finds it wherever it keeps it; the path the launch
    resolved on the API's host when this one has the model nowhere else."""
    try:
        return resolve_model_path(settings, model)
    except AppError as exc:
        if Path(launched_path).exists():
            return Path(launched_path)
        raise FileNotFoundError(f"the base model {model!r} is not on this worker: {exc.message}") from None


def _under_model_roots(settings: Settings, model: str) -> Path | None:
    """The path when it exists under a model root, after resolving `..` and symlinks; None for anything else. A path
    that is outside the roots as written is refused without touching the disk."""
    if not model.startswith("/") or "\x00" in model:
        return None
    roots = settings.model_root_list
    written = Path(os.path.normpath(model))
    if not any(written.is_relative_to(root) for root in roots):
        return None
    try:
        resolved = written.resolve()
        inside = any(resolved.is_relative_to(root) for root in roots)
        return resolved if inside and resolved.exists() else None
    except OSError:  # a symlink loop, a name too long
        return None
