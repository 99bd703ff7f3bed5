"""The artifact store: where run files (checkpoints, adapters, weights, exports, logs, samples) and uploaded datasets
live, so that the API and every worker reach them with nothing shared but the store itself.

Two backends behind one small interface. `LocalStore`, the embedded default, is the folders of
TUNELAB_ARTIFACT_DIR and TUNELAB_DATASET_DIR: a key is a file there, and a worker writes its run's files in place.
`S3Store` is any S3-compatible bucket (TUNELAB_ARTIFACT_URL=s3://bucket/prefix; MinIO, R2 and the like through
TUNELAB_S3_ENDPOINT_URL), through boto3: credentials come from its usual chain (AWS_* variables, a profile, an
instance role) and never pass through Tunelab's settings, logs or answers.

Keys are POSIX paths: `runs/<run id>/<path in the run's folder>` and `datasets/<sha256>.jsonl`."""

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlparse

from tunelab.core.errors import AppError

if TYPE_CHECKING:
    from tunelab.core.settings import Settings

log = logging.getLogger(__name__)
CHUNK_BYTES = 1 << 20
RUNS = "runs"
DATASETS = "datasets"


@dataclass(frozen=True)
class StoredObject:
    key: str
    size: int


class ArtifactStore(Protocol):
    """What Tunelab asks of a store. Every method raises STORE_UNAVAILABLE (503) when the store cannot be reached."""

    def put_file(self, key: str, source: Path) -> None: ...

    def get_file(self, key: str, target: Path) -> None:
        """Copy the object to `target`, which appears whole or not at all."""

    def read_chunks(self, key: str, start: int = 0, length: int | None = None) -> Iterator[bytes]: ...

    def size(self, key: str) -> int | None:
        """The object's size, or None when there is none."""

    def listing(self, prefix: str) -> list[StoredObject]:
        """Every object under `prefix` (a folder: it ends with '/'), sorted by key."""

    def delete(self, keys: list[str]) -> None: ...

    def delete_prefix(self, prefix: str) -> None: ...

    def download_url(self, key: str, filename: str) -> str | None:
        """A presigned URL that downloads the object as `filename`, or None where downloads go through the API."""

    def local_path(self, key: str) -> Path | None:
        """The file behind a key where the store is this machine's disk (the local backend); None otherwise."""


def run_key(run_id: int, relative: str = "") -> str:
    return f"{RUNS}/{run_id}/{relative}"


def dataset_key(relative: str) -> str:
    return f"{DATASETS}/{relative}"


def unavailable(action: str, exc: Exception) -> AppError:
    """The store did not answer. Its error's text may name the endpoint but never a credential (boto3 keeps them out
    of its messages)."""
    return AppError("STORE_UNAVAILABLE", f"the artifact store is unavailable ({action}): {type(exc).__name__}: {exc}",
                    {"action": action})


def _write_atomically(target: Path, write: Any) -> None:
    """`write(file)` into a temp file beside `target`, then rename: a reader never sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


class LocalStore:
    """The store as folders of this machine: each top-level key segment has a root folder."""

    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots

    def local_path(self, key: str) -> Path:
        top, _, rest = key.partition("/")
        if top not in self.roots:
            raise ValueError(f"no folder for store keys under {top!r}")
        root = self.roots[top].resolve()
        path = (root / rest).resolve() if rest else root
        if not path.is_relative_to(root):
            raise ValueError(f"store key {key!r} leaves its folder")
        return path

    def put_file(self, key: str, source: Path) -> None:
        target = self.local_path(key)
        if source.resolve() != target:
            with source.open("rb") as data:
                _write_atomically(target, lambda out: shutil.copyfileobj(data, out, CHUNK_BYTES))

    def get_file(self, key: str, target: Path) -> None:
        source = self.local_path(key)
        if source != target.resolve():
            with source.open("rb") as data:
                _write_atomically(target, lambda out: shutil.copyfileobj(data, out, CHUNK_BYTES))

    def read_chunks(self, key: str, start: int = 0, length: int | None = None) -> Iterator[bytes]:
        with self.local_path(key).open("rb") as data:
            data.seek(start)
            left = length
            while left is None or left > 0:
                chunk = data.read(CHUNK_BYTES if left is None else min(CHUNK_BYTES, left))
                if not chunk:
                    return
                if left is not None:
                    left -= len(chunk)
                yield chunk

    def size(self, key: str) -> int | None:
        path = self.local_path(key)
        return path.stat().st_size if path.is_file() else None

    def listing(self, prefix: str) -> list[StoredObject]:
        folder = self.local_path(prefix)
        if not folder.is_dir():
            return []
        base = prefix if prefix.endswith("/") else f"{prefix}/"
        return [StoredObject(base + path.relative_to(folder).as_posix(), path.stat().st_size)
                for path in sorted(folder.rglob("*")) if path.is_file() and not path.name.endswith(".part")]

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            self.local_path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.local_path(prefix), ignore_errors=True)

    def download_url(self, key: str, filename: str) -> str | None:
        return None


class S3Store:
    """An S3-compatible bucket under a key prefix."""

    DELETE_BATCH = 1000  # DeleteObjects' limit

    def __init__(self, url: str, endpoint_url: str | None, presigned_ttl_s: int | None) -> None:
        import boto3
        from botocore.config import Config

        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(f"TUNELAB_ARTIFACT_URL must be s3://bucket/prefix, not {url!r}")
        self.bucket, self.prefix = parsed.netloc, parsed.path.strip("/")
        self.presigned_ttl_s = presigned_ttl_s
        # Path-style addressing: MinIO and moto serve buckets under the endpoint's path, and AWS accepts it too.
        config = Config(retries={"max_attempts": 5, "mode": "standard"}, s3={"addressing_style": "path"},
                        signature_version="s3v4",
                        connect_timeout=5, read_timeout=60)
        self.client = boto3.session.Session().client("s3", endpoint_url=endpoint_url or None, config=config)

    def _full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _relative(self, full_key: str) -> str:
        return full_key[len(self.prefix) + 1:] if self.prefix else full_key

    def _call(self, action: str, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                raise FileNotFoundError(kwargs.get("Key", "")) from exc
            raise unavailable(action, exc) from exc
        except BotoCoreError as exc:
            raise unavailable(action, exc) from exc

    def local_path(self, key: str) -> Path | None:
        return None

    def put_file(self, key: str, source: Path) -> None:
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import BotoCoreError, ClientError

        try:  # multipart above boto3's threshold (8 MiB), in parallel parts
            self.client.upload_file(str(source), self.bucket, self._full(key))
        except (BotoCoreError, ClientError, S3UploadFailedError) as exc:
            raise unavailable("upload", exc) from exc

    def get_file(self, key: str, target: Path) -> None:
        def download(out: Any) -> None:
            for chunk in self.read_chunks(key):
                out.write(chunk)

        _write_atomically(target, download)

    def read_chunks(self, key: str, start: int = 0, length: int | None = None) -> Iterator[bytes]:
        ranged = {} if start == 0 and length is None else {
            "Range": f"bytes={start}-{'' if length is None else start + length - 1}"}
        body = self._call("download", "get_object", Key=self._full(key), **ranged)["Body"]
        try:
            yield from body.iter_chunks(CHUNK_BYTES)
        finally:
            body.close()

    def size(self, key: str) -> int | None:
        try:
            return int(self._call("read", "head_object", Key=self._full(key))["ContentLength"])
        except FileNotFoundError:
            return None

    def listing(self, prefix: str) -> list[StoredObject]:
        from botocore.exceptions import BotoCoreError, ClientError

        found = []
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._full(prefix))
            for page in pages:
                found += [StoredObject(self._relative(item["Key"]), int(item["Size"])) for item in page.get("Contents", ())]
        except (BotoCoreError, ClientError) as exc:
            raise unavailable("list", exc) from exc
        return sorted(found, key=lambda item: item.key)

    def delete(self, keys: list[str]) -> None:
        for first in range(0, len(keys), self.DELETE_BATCH):
            batch = [{"Key": self._full(key)} for key in keys[first:first + self.DELETE_BATCH]]
            self._call("delete", "delete_objects", Delete={"Objects": batch, "Quiet": True})

    def delete_prefix(self, prefix: str) -> None:
        self.delete([item.key for item in self.listing(prefix)])

    def download_url(self, key: str, filename: str) -> str | None:
        if self.presigned_ttl_s is None:
            return None
        disposition = f"attachment; filename*=UTF-8''{quote(filename)}"
        return str(self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": self._full(key),
                                  "ResponseContentDisposition": disposition},
            ExpiresIn=self.presigned_ttl_s))


def is_local(store: ArtifactStore) -> bool:
    return isinstance(store, LocalStore)


@lru_cache(maxsize=4)
def _store_for(artifact_url: str, endpoint: str | None, presigned: int | None, artifact_dir: Path,
               dataset_dir: Path) -> ArtifactStore:
    if artifact_url:
        return S3Store(artifact_url, endpoint, presigned)
    return LocalStore({RUNS: artifact_dir, DATASETS: dataset_dir})


def get_store(settings: "Settings") -> ArtifactStore:
    """The store these settings name; one client per process (boto3's clients are thread-safe)."""
    return _store_for(settings.artifact_url, settings.s3_endpoint_url,
                      settings.presigned_url_ttl_s if settings.presigned_downloads else None,
                      settings.artifact_dir, settings.dataset_dir)
