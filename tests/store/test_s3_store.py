"""The S3 backend of the artifact store and a run's files moving through it, against moto's S3 server."""

import json
from pathlib import Path

import httpx
import pytest

from tests.store.conftest import SECRET_KEY


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_s3_store_keeps_lists_reads_and_deletes_files_under_its_prefix(s3_settings, tmp_path, s3_server):
    from tunelab.core.store import S3Store, StoredObject, get_store

    store = get_store(s3_settings)
    assert isinstance(store, S3Store) and store.local_path("runs/1/") is None
    source = _write(tmp_path / "a.txt", "0123456789")
    store.put_file("runs/1/adapter/a.txt", source)
    store.put_file("runs/1/train.log", source)
    store.put_file("runs/10/train.log", source)
    assert store.listing("runs/1/") == [StoredObject("runs/1/adapter/a.txt", 10), StoredObject("runs/1/train.log", 10)]
    # Under the URL's prefix in the bucket, and nowhere else.
    bucket = s3_settings.artifact_url.removeprefix("s3://").split("/")[0]
    keys = sorted(item["Key"] for item in s3_server.client().list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == ["artifacts/runs/1/adapter/a.txt", "artifacts/runs/1/train.log", "artifacts/runs/10/train.log"]
    assert store.size("runs/1/train.log") == 10 and store.size("runs/1/nothing") is None
    assert b"".join(store.read_chunks("runs/1/train.log", 3, 4)) == b"3456"
    assert b"".join(store.read_chunks("runs/1/train.log", 7)) == b"789"
    with pytest.raises(FileNotFoundError):
        b"".join(store.read_chunks("runs/1/nothing"))
    store.get_file("runs/1/adapter/a.txt", tmp_path / "copy" / "a.txt")
    assert (tmp_path / "copy" / "a.txt").read_text() == "0123456789"
    assert store.download_url("runs/1/train.log", "train.log") is None, "presigned only when asked for"
    store.delete_prefix("runs/1/")
    assert store.listing("runs/1/") == [] and store.size("runs/10/train.log") == 10


def test_a_presigned_url_downloads_the_file_under_its_name_and_expires(s3_settings, tmp_path):
    from tunelab.core.store import S3Store

    store = S3Store(s3_settings.artifact_url, s3_settings.s3_endpoint_url, presigned_ttl_s=60)
    store.put_file("runs/2/adapter/adapter_model.safetensors", _write(tmp_path / "w", "weights"))
    url = store.download_url("runs/2/adapter/adapter_model.safetensors", "adapter_model.safetensors")
    assert url is not None and SECRET_KEY not in url
    response = httpx.get(url)
    assert response.status_code == 200 and response.text == "weights"
    assert "adapter_model.safetensors" in response.headers["content-disposition"]
    assert "X-Amz-Expires=60" in url


def test_a_store_that_does_not_answer_is_a_503_naming_it_without_credentials(s3_settings):
    from tunelab.core.errors import AppError
    from tunelab.core.settings import Settings
    from tunelab.core.store import S3Store

    closed = Settings(data_dir=s3_settings.data_dir, artifact_url=s3_settings.artifact_url, database_url="sqlite://",
                      s3_endpoint_url="http://127.0.0.1:9")  # the discard port: nothing listens
    store = S3Store(closed.artifact_url, closed.s3_endpoint_url, None)
    with pytest.raises(AppError) as refused:
        store.size("runs/1/train.log")
    assert refused.value.code == "STORE_UNAVAILABLE" and refused.value.status_code == 503
    assert SECRET_KEY not in refused.value.message


def test_settings_refuse_a_store_url_they_cannot_use(tmp_path):
    from pydantic import ValidationError

    from tunelab.core.settings import Settings

    for url in ("gs://bucket/prefix", "s3://", "s3:///prefix", "/srv/artifacts"):
        with pytest.raises(ValidationError, match="TUNELAB_ARTIFACT_URL"):
            Settings(data_dir=tmp_path, artifact_url=url, database_url="sqlite://")


def _checkpoint(folder: Path, step: int, complete: bool = True) -> None:
    checkpoint = folder / "checkpoints" / f"checkpoint-{step}"
    _write(checkpoint / "adapter_model.safetensors", f"weights at {step}")
    _write(checkpoint / "optimizer.pt", f"optimizer at {step}")
    if complete:
        _write(checkpoint / "trainer_state.json", json.dumps({"global_step": step}))


def test_a_runs_files_go_to_the_store_and_come_back_on_another_host(s3_settings, tmp_path):
    """Checkpoints complete are uploaded and the store keeps those the folder keeps; unchanged files are not sent
    twice; a second host's empty folder pulls the files and the newest complete checkpoint only."""
    from tunelab.core.store import get_store, run_key
    from tunelab.services.runs import run_files
    from tunelab.training.checkpoints import latest_checkpoint

    store = get_store(s3_settings)
    first_host = tmp_path / "host-1" / "runs" / "7"
    _write(first_host / "train.log", "step 1\n")
    _write(first_host / "samples.jsonl", "{}\n")
    _checkpoint(first_host, 2)
    _checkpoint(first_host, 4)
    _checkpoint(first_host, 6, complete=False)  # killed while it saved

    assert run_files.publish(s3_settings, 7, first_host, live_only=True) == 2  # the log and the samples only
    assert run_files.publish(s3_settings, 7, first_host, live_only=True) == 0  # unchanged: nothing sent again
    with (first_host / "train.log").open("a") as log:
        log.write("step 2\n")
    assert run_files.publish(s3_settings, 7, first_host, live_only=True) == 1
    run_files.sync_checkpoints(s3_settings, 7, first_host)
    stored = {item.key.removeprefix(run_key(7)) for item in store.listing(run_key(7))}
    assert {key for key in stored if key.startswith("checkpoints/")} == {
        f"checkpoints/checkpoint-{step}/{name}" for step in (2, 4)
        for name in ("adapter_model.safetensors", "optimizer.pt", "trainer_state.json")}
    # The trainer's rotation removes checkpoint-2: the store drops it too.
    import shutil

    shutil.rmtree(first_host / "checkpoints" / "checkpoint-2")
    run_files.sync_checkpoints(s3_settings, 7, first_host)
    assert not any(item.key.startswith(run_key(7, "checkpoints/checkpoint-2/")) for item in store.listing(run_key(7)))

    second_host = tmp_path / "host-2" / "runs" / "7"
    assert run_files.pull(s3_settings, 7, second_host) == 5  # log, samples, checkpoint-4's three files
    assert (second_host / "train.log").read_text() == "step 1\nstep 2\n"
    assert latest_checkpoint(second_host / "checkpoints") == second_host / "checkpoints" / "checkpoint-4"
    assert (second_host / "checkpoints" / "checkpoint-4" / "optimizer.pt").read_text() == "optimizer at 4"
    assert run_files.publish(s3_settings, 7, second_host) == 0, "what was pulled is not sent back"


def test_the_cache_fetches_a_folder_once_and_evicts_the_least_recently_used(s3_settings, tmp_path):
    from tunelab.core.store import get_store
    from tunelab.core.store_cache import cached_file, cached_folder

    store = get_store(s3_settings)
    for run_id in (1, 2, 3):
        store.put_file(f"runs/{run_id}/adapter/weights", _write(tmp_path / "w", "x" * 400))
    store.put_file("datasets/abc.jsonl", _write(tmp_path / "d", '{"text": "hi"}\n'))
    small = s3_settings.model_copy(update={"cache_max_gb": 1000 / 1024**3})  # room for two folders of 400 bytes
    first = cached_folder(small, "runs/1/adapter/")
    assert (first / "weights").read_text() == "x" * 400
    store.delete_prefix("runs/1/")
    assert cached_folder(small, "runs/1/adapter/") == first, "a complete copy is not fetched again"
    cached_folder(small, "runs/2/adapter/")
    cached_folder(small, "runs/3/adapter/")
    assert not first.exists(), "the least recently used folder went to make room"
    assert cached_file(small, "datasets/abc.jsonl").read_text() == '{"text": "hi"}\n'
    with pytest.raises(FileNotFoundError):
        cached_folder(small, "runs/404/adapter/")


def test_the_api_serves_a_runs_files_from_the_s3_store_streamed_or_presigned(client, app, s3_settings, tmp_path):
    """Downloads never read a shared path: one file streamed from the store (or, with TUNELAB_PRESIGNED_DOWNLOADS, a
    redirect to a presigned URL of it), a folder as a zip streamed from it, the log paged from it; a store that does
    not answer is a 503 in the error shape."""
    import io
    import zipfile

    from tests.conftest import find_bundled_dataset
    from tunelab.core.settings import get_settings
    from tunelab.core.store import get_store, run_key
    from tunelab.db.session import session_scope
    from tunelab.services.runs.artifacts import index_run_artifacts

    sample_id = find_bundled_dataset(lambda params: client.get("/api/v1/datasets", params=params).json())["id"]
    run = client.post("/api/v1/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": sample_id,
                                            "queue": "nobody-listens"}).json()
    store = get_store(s3_settings)
    store.put_file(run_key(run["id"], "adapter/adapter_config.json"), _write(tmp_path / "c", '{"peft_type": "LORA"}'))
    store.put_file(run_key(run["id"], "tokenizer/tokenizer_config.json"), _write(tmp_path / "t", "{}"))
    store.put_file(run_key(run["id"], "train.log"), _write(tmp_path / "l", "line one\nline two\n"))
    with session_scope() as session:
        assert len(index_run_artifacts(session, s3_settings, run["id"])) == 3
    url = f"/api/v1/runs/{run['id']}"
    app.dependency_overrides[get_settings] = lambda: s3_settings
    try:
        streamed = client.get(f"{url}/artifacts/adapter/adapter_config.json")
        assert streamed.status_code == 200 and streamed.json() == {"peft_type": "LORA"}
        assert "adapter_config.json" in streamed.headers["content-disposition"]
        archive = zipfile.ZipFile(io.BytesIO(client.get(f"{url}/archives/adapter.zip").content))
        assert sorted(archive.namelist()) == ["adapter_config.json", "tokenizer_config.json"]
        assert client.get(f"{url}/logs", params={"tail_bytes": 12}).json()["text"] == "line two\n"

        app.dependency_overrides[get_settings] = lambda: s3_settings.model_copy(update={"presigned_downloads": True})
        redirected = client.get(f"{url}/artifacts/adapter/adapter_config.json", follow_redirects=False)
        assert redirected.status_code == 307 and SECRET_KEY not in redirected.headers["location"]
        assert httpx.get(redirected.headers["location"]).json() == {"peft_type": "LORA"}

        app.dependency_overrides[get_settings] = lambda: s3_settings.model_copy(
            update={"s3_endpoint_url": "http://127.0.0.1:9"})
        down = client.get(f"{url}/artifacts/adapter/adapter_config.json")
        assert down.status_code == 503 and down.json()["error"]["code"] == "STORE_UNAVAILABLE"
        assert SECRET_KEY not in down.text
    finally:
        app.dependency_overrides.pop(get_settings, None)
