"""Workers that share nothing with the API but PostgreSQL, Redis and the S3 store (issue 25, items 1–3).

The API and each worker have a data folder of their own, with no path in common, and each worker its own copy of the
base model: a dataset uploaded through the API trains on a worker that fetches it from the store by hash; killed after
a checkpoint, the run resumes on a second worker that pulls that checkpoint; the adapter downloads through the API and
through a share link, and loads with plain PEFT; the second worker merges an export, and an inference worker on a third
host answers the playground with the run's adapter fetched from the store. The store's credentials appear nowhere a user or a log reader looks."""

import io
import json
import shutil
import uuid
import zipfile

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import (
    PG_ADMIN_URL,
    ApiProcess,
    WorkerProcess,
    first_admin_tokens,
    fresh_install,
    wait_for,
    wait_while_progressing,
)
from tests.sse import SseReader
from tests.store.conftest import SECRET_KEY, store_environment
from tests.worker.conftest import series, wait_finished

ROWS = [{"instruction": f"Add {a} and {b}.", "output": str(a + b)} for a in range(12) for b in range(4)]


@pytest.fixture
def postgres_database():
    """A database of the test's own on the session's PostgreSQL: the one thing besides Redis and the store that the
    API and the workers share."""
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"tunelab_hosts_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _host(env: dict[str, str], folder, assets) -> dict[str, str]:
    """A worker host's environment: its own data folder and its own copy of the base models."""
    shutil.copytree(assets.models_dir, folder / "models", ignore=shutil.ignore_patterns("*.gguf"))
    return {**env, "TUNELAB_DATA_DIR": str(folder / "var"), "TUNELAB_MODELS_DIR": str(folder / "models")}


def test_a_run_trains_resumes_and_downloads_across_hosts_that_share_no_folder(s3_server, assets, redis_url, tmp_path,
                                                                              postgres_database):
    bucket = s3_server.new_bucket()
    env = fresh_install(tmp_path / "api-host", assets, "hosts", TUNELAB_DATABASE_URL=postgres_database,
                        TUNELAB_REDIS_URL=redis_url, TUNELAB_METRICS_DURABILITY="relaxed",
                        **store_environment(s3_server, bucket))
    hosts = [_host(env, tmp_path / f"worker-host-{n}", assets) for n in (1, 2)]
    server = ApiProcess(tmp_path / "api-host" / "api.log", env)
    workers: list[WorkerProcess] = []
    try:
        token = first_admin_tokens(server.base_url, "hosts")[0]["token"]
        api = httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=60,
                           headers={"Authorization": f"Bearer {token}"})
        data = "".join(json.dumps(row) + "\n" for row in ROWS).encode()
        uploaded = api.post("/datasets", files={"file": ("sums.jsonl", data, "application/jsonl")})
        assert uploaded.status_code == 201, uploaded.text
        dataset = uploaded.json()
        s3 = s3_server.client()
        stored = {item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="artifacts/datasets/")["Contents"]}
        assert f"artifacts/datasets/{dataset['content_hash']}.jsonl" in stored

        workers.append(WorkerProcess(tmp_path / "worker-host-1" / "worker.log", env=hosts[0]))
        workers[0].wait_ready()
        body = {"method": "lora", "model": "tunelab-tiny", "dataset": dataset["id"],
                "params": {"max_steps": 40, "eval_steps": 40, "checkpoint_every_steps": 4, "checkpoints_to_keep": 2}}
        run = api.post("/runs", json=body)
        assert run.status_code == 201, run.text
        run_id = run.json()["id"]
        wait_for(lambda: (api.get(f"/runs/{run_id}").json()["checkpoint_step"] or 0) >= 4, 300, 0.05,
                 "the run's first checkpoint in the store")
        workers[0].kill()
        checkpoints = {key.split("/")[4] for key in _keys(s3, bucket, f"artifacts/runs/{run_id}/checkpoints/")}
        assert checkpoints, "the checkpoint SQL names is in the store"

        workers.append(WorkerProcess(tmp_path / "worker-host-2" / "worker.log", env=hosts[1]))
        workers[1].wait_ready()
        final = wait_finished(api, run_id)
        assert final["status"] == "succeeded", final["status_reason"]
        assert final["attempt"] == 2 and final["progress"]["current_step"] == 40
        assert series(api, run_id, "train/loss")["step"] == list(range(1, 41)), "every step once, on two hosts"
        log = api.get(f"/runs/{run_id}/logs", params={"tail_bytes": 1024 * 1024}).json()["text"]
        assert "attempt 2, training process" in log and "resuming from step" in log
        second_host_run = tmp_path / "worker-host-2" / "var" / "cache" / "runs" / str(run_id)
        assert (second_host_run / "checkpoints").is_dir(), "the second host resumed from the checkpoint it pulled"
        assert (tmp_path / "worker-host-2" / "var" / "cache" / "store" / "datasets" /
                f"{dataset['content_hash']}.jsonl").is_file(), "the dataset, fetched into the host's cache by hash"
        assert not (tmp_path / "api-host" / "var" / "artifacts" / str(run_id)).exists(), "nothing on the API's disk"
        kept = {key.split("/")[4] for key in _keys(s3, bucket, f"artifacts/runs/{run_id}/checkpoints/")}
        assert 0 < len(kept) <= 2, f"the store keeps the newest checkpoints only: {kept}"

        adapter_zip = api.get(f"/runs/{run_id}/archives/adapter.zip")
        assert adapter_zip.status_code == 200, adapter_zip.text
        share = api.post("/shares", json={"run_ids": [run_id], "allow_downloads": True})
        assert share.status_code == 201, share.text
        shared_zip = httpx.get(f"{server.base_url}/api/v1/runs/{run_id}/archives/adapter.zip",
                               params={"share": share.json()["token"]}, timeout=60)
        assert shared_zip.status_code == 200 and shared_zip.content == adapter_zip.content
        config = api.get(f"/runs/{run_id}/artifacts/adapter/adapter_config.json")
        assert config.status_code == 200 and json.loads(config.content)["peft_type"] == "LORA"
        assert json.loads(config.content)["base_model_name_or_path"] == "tunelab-tiny", "the base by id, not by path"
        _loads_with_plain_peft(adapter_zip.content, assets.models_dir / "tunelab-tiny", tmp_path / "unzipped")

        # The merged export on the second host, and the playground on a third (an inference worker), both from the
        # store: neither has the run's files until it fetches them.
        export = api.post(f"/runs/{run_id}/exports")
        assert export.status_code == 202, export.text
        exported = wait_for(lambda: next((e for e in api.get(f"/runs/{run_id}/exports").json()["data"]
                                          if e["id"] == export.json()["id"] and e["status"] != "queued"
                                          and e["status"] != "running"), None), 300, 0.2, "the export")
        assert exported["status"] == "succeeded", exported["status_reason"]
        merged = api.get(f"/runs/{run_id}/archives/merged.zip")
        assert merged.status_code == 200 and "config.json" in zipfile.ZipFile(io.BytesIO(merged.content)).namelist()
        infer_host = _host(env, tmp_path / "infer-host", assets)
        workers.append(WorkerProcess(tmp_path / "infer-host" / "worker.log", env["TUNELAB_INFER_QUEUE"], infer_host))
        workers[-1].wait_ready()
        asked = api.post("/playground", json={"project_id": final["project_id"], "run_ids": [run_id],
                                              "prompt": "Add 2 and 3.", "sampling": {"max_new_tokens": 4}})
        assert asked.status_code == 202, asked.text
        reader = SseReader(server.base_url + asked.json()["events_url"],
                           headers={"Authorization": f"Bearer {token}"}).start()
        wait_while_progressing(lambda: reader, lambda r: r.finished.is_set(), lambda r: len(r.events),
                               message="the playground's stream to end")
        assert "failed" not in reader.kinds() and "done" in reader.kinds(), reader.events
        assert (tmp_path / "infer-host" / "var" / "cache" / "store" / "runs" / str(run_id) / "adapter").is_dir()

        seen = [api.get(f"/runs/{run_id}").text, api.get(f"/runs/{run_id}/artifacts").text, log,
                api.get(f"/runs/{run_id}/artifacts/config.json").text]
        seen += [path.read_text(errors="replace") for path in tmp_path.rglob("*.log")]
        seen += [json.dumps(reader.events)]
        assert not any(SECRET_KEY in text for text in seen), "the store's secret shows nowhere"
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.stop()
        server.stop()


def _keys(s3, bucket: str, prefix: str) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]


def _loads_with_plain_peft(archive: bytes, base, folder) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    zipfile.ZipFile(io.BytesIO(archive)).extractall(folder)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base)), str(folder))
    with torch.no_grad():
        logits = model(torch.tensor([[1, 2, 3]])).logits
    assert torch.isfinite(logits).all()
    with model.disable_adapter(), torch.no_grad():
        assert not torch.equal(model(torch.tensor([[1, 2, 3]])).logits, logits), "the adapter changes the model"
