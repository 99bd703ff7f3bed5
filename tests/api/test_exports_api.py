"""Exports and zips through the API, without a worker: what is refused (409, naming why), what is queued and
audit-logged, and how an export in progress holds the run's files, and what an artifact folder's zip holds."""

import io
import json
import zipfile

import pytest

from tests.api.teams_helpers import IDLE_QUEUE, unique
from tests.conftest import find_bundled_dataset

API = "/api/v1"


@pytest.fixture
def sample_id(client) -> int:
    return find_bundled_dataset(lambda params: client.get(f"{API}/datasets", params=params).json())["id"]


def _canceled_run(client, sample_id: int, method: str = "lora") -> dict:
    """A real run that no worker takes, canceled while queued: finished, with whatever the test writes for it."""
    body = {"method": method, "model": "tunelab-tiny", "dataset": sample_id, "queue": IDLE_QUEUE,
            "name": unique("export")}
    run = client.post(f"{API}/runs", json=body).json()
    assert client.post(f"{API}/runs/{run['id']}/cancel").status_code == 200
    return run


def _write(settings, run_id: int, files: dict[str, str]) -> None:
    """Files in the run's folder, indexed as the worker indexes what training wrote."""
    from tunelab.db.session import session_scope
    from tunelab.services.runs.artifacts import index_run_artifacts, run_dir

    folder = run_dir(settings, run_id)
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    with session_scope() as session:
        index_run_artifacts(session, settings, run_id)


LORA_ADAPTER = {"adapter/adapter_config.json": json.dumps({"peft_type": "LORA", "r": 8}),
                "adapter/adapter_model.safetensors": "weights",
                "tokenizer/tokenizer.json": "{}", "tokenizer/tokenizer_config.json": "{}"}


def _refusal(response) -> dict:
    assert response.status_code == 409, response.text
    return response.json()["error"]


def test_export_is_refused_with_409_when_the_run_has_no_adapter_that_merges(client, settings, sample_id):
    queued = client.post(f"{API}/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": sample_id,
                                              "queue": IDLE_QUEUE}).json()
    error = _refusal(client.post(f"{API}/runs/{queued['id']}/exports"))
    assert error["code"] == "RUN_NOT_EXPORTABLE" and "queued" in error["message"]

    nothing_saved = _canceled_run(client, sample_id)
    assert "saved no adapter" in _refusal(client.post(f"{API}/runs/{nothing_saved['id']}/exports"))["message"]

    full = _canceled_run(client, sample_id)
    _write(settings, full["id"], {"model/config.json": "{}", "model/model.safetensors": "weights"})
    assert "full fine-tuning" in _refusal(client.post(f"{API}/runs/{full['id']}/exports"))["message"]

    prompt = _canceled_run(client, sample_id, method="prompt")
    _write(settings, prompt["id"], {"adapter/adapter_config.json": json.dumps({"peft_type": "PROMPT_TUNING"})})
    assert "does not merge" in _refusal(client.post(f"{API}/runs/{prompt['id']}/exports"))["message"]

    external = client.post(f"{API}/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True}).json()
    client.post(f"{API}/runs/{external['id']}/cancel")
    assert _refusal(client.post(f"{API}/runs/{external['id']}/exports"))["code"] == "RUN_NOT_EXPORTABLE"
    assert client.get(f"{API}/runs/{queued['id']}/exports").json() == {"data": [], "count": 0}


def _set_export(export_id: int, **values) -> None:
    """What a worker would have written: the export claimed, with its heartbeat."""
    from sqlalchemy import update

    from tunelab.db.models import RunExport
    from tunelab.db.session import session_scope

    with session_scope() as session:
        session.execute(update(RunExport).where(RunExport.id == export_id).values(**values))


def _export(client, run_id: int, export_id: int) -> dict:
    return next(e for e in client.get(f"{API}/runs/{run_id}/exports").json()["data"] if e["id"] == export_id)


def test_export_is_queued_once_and_audit_logged(client, settings, sample_id):
    run = _canceled_run(client, sample_id)
    _write(settings, run["id"], LORA_ADAPTER)

    response = client.post(f"{API}/runs/{run['id']}/exports")
    assert response.status_code == 202, response.text
    export = response.json()
    assert export["status"] == "queued" and export["run_id"] == run["id"] and export["archive_url"] is None
    # Asking again while it waits sends its message again (Redis may have lost it): the same export, no new one.
    again = client.post(f"{API}/runs/{run['id']}/exports")
    assert again.status_code == 202 and again.json()["id"] == export["id"]
    listed = client.get(f"{API}/runs/{run['id']}/exports").json()
    assert [e["id"] for e in listed["data"]] == [export["id"]]

    audit = client.get(f"{API}/projects/{run['project_id']}/audit").json()["data"]
    logged = [e for e in audit if e["action"] == "run.export" and e["target_id"] == run["id"]]
    assert len(logged) == 1 and logged[0]["details"] == {"export_id": export["id"]}


def test_a_running_export_holds_the_run_files_until_its_worker_is_lost(client, settings, sample_id):
    from datetime import timedelta

    from tunelab.db.base import utcnow

    run = _canceled_run(client, sample_id)
    _write(settings, run["id"], LORA_ADAPTER)
    export = client.post(f"{API}/runs/{run['id']}/exports").json()
    _set_export(export["id"], status="running", heartbeat_at=utcnow())
    for response in (client.post(f"{API}/runs/{run['id']}/exports"), client.post(f"{API}/runs/{run['id']}/resume"),
                     client.delete(f"{API}/runs/{run['id']}")):
        error = _refusal(response)
        assert error["code"] == "EXPORT_IN_PROGRESS" and error["details"] == {"export_id": export["id"]}

    # Its heartbeat stopped: its worker is gone, and the next export replaces it.
    _set_export(export["id"], heartbeat_at=utcnow() - timedelta(seconds=settings.heartbeat_timeout_s + 1))
    replacement = client.post(f"{API}/runs/{run['id']}/exports")
    assert replacement.status_code == 202 and replacement.json()["id"] != export["id"]
    lost = _export(client, run["id"], export["id"])
    assert lost["status"] == "failed" and lost["status_reason"].startswith("worker lost")

    # A resume withdraws an export no worker has taken yet: its message, when delivered, finds nothing to do.
    assert client.post(f"{API}/runs/{run['id']}/resume").status_code == 200
    withdrawn = _export(client, run["id"], replacement.json()["id"])
    assert withdrawn["status"] == "failed" and "withdrawn" in withdrawn["status_reason"]


def test_adapter_zip_holds_the_adapter_and_the_tokenizer_at_its_top(client, settings, sample_id):
    run = _canceled_run(client, sample_id)
    _write(settings, run["id"], {**LORA_ADAPTER, "checkpoints/checkpoint-1/adapter_config.json": "{}"})

    archives = client.get(f"{API}/runs/{run['id']}/artifacts").json()["archives"]
    assert archives == [{"folder": "adapter", "download_url": f"{API}/runs/{run['id']}/archives/adapter.zip"}]
    response = client.get(archives[0]["download_url"])
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    assert f'filename="run-{run["id"]}-adapter.zip"' in response.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert archive.testzip() is None
        assert sorted(archive.namelist()) == ["adapter_config.json", "adapter_model.safetensors", "tokenizer.json",
                                              "tokenizer_config.json"]
        assert archive.read("adapter_model.safetensors") == b"weights"
        assert archive.getinfo("adapter_model.safetensors").compress_type == zipfile.ZIP_STORED

    missing = client.get(f"{API}/runs/{run['id']}/archives/merged.zip")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "ARTIFACT_NOT_FOUND"
    assert client.get(f"{API}/runs/{run['id']}/archives/checkpoints.zip").status_code == 422


def test_a_merge_that_fails_records_why_and_leaves_no_merged_folder(client, settings, sample_id):
    from tunelab.services.runs.exports import execute_export

    run = _canceled_run(client, sample_id)
    _write(settings, run["id"], LORA_ADAPTER)  # an adapter_config.json with no base to load: the merge fails
    export = client.post(f"{API}/runs/{run['id']}/exports").json()

    assert execute_export(export["id"], "test-worker") == "failed"
    failed = _export(client, run["id"], export["id"])
    assert failed["status"] == "failed" and failed["worker"] == "test-worker"
    assert failed["status_reason"] == "the merge process exited with code 1; the run's log has its output"
    assert "Traceback" in client.get(f"{API}/runs/{run['id']}/logs").json()["text"]
    assert not (settings.artifact_dir / str(run["id"]) / "merged").exists()
    assert execute_export(export["id"], "test-worker") is None  # a second delivery finds it done
