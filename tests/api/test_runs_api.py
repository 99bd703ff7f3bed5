"""Bad input to POST /runs gets a 4xx in the one error shape, naming the field, and leaves nothing behind."""

import pytest
from sqlalchemy import func, select

from tests.conftest import SESSION_TAG, find_bundled_dataset
from tunelab.db.models import Run


@pytest.fixture
def sample_id(client) -> int:
    return find_bundled_dataset(lambda params: client.get("/api/v1/datasets", params=params).json())["id"]


def _run_count(db_session) -> int:
    db_session.rollback()
    return db_session.scalar(select(func.count(Run.id)))


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"method": "telepathy"}, "METHOD_NOT_FOUND", "method"),
        ({"objective": "astrology"}, "OBJECTIVE_NOT_FOUND", "objective"),
        ({"params": {"learning_rate": 5.0}}, "VALIDATION_ERROR", "params.learning_rate"),
        ({"params": {"max_steps": -3}}, "VALIDATION_ERROR", "params.max_steps"),
        ({"params": {"no_such_knob": 1}}, "VALIDATION_ERROR", "params.no_such_knob"),
        ({"model": "no-such-org/no-such-model"}, "MODEL_NOT_FOUND", "model"),
        ({"dataset": 987654}, "DATASET_NOT_FOUND", "dataset"),
        ({"queue": "cpu", "params": {"precision": "bf16"}}, "VALIDATION_ERROR", "params.precision"),
        ({"queue": "cpu", "params": {"zero_stage": 2}}, "VALIDATION_ERROR", "params.zero_stage"),
        ({"params": {"num_processes": 0}}, "VALIDATION_ERROR", "params.num_processes"),
        ({"queue": "cpu", "method": "qlora"}, "VALIDATION_ERROR", "method"),
        ({"objective": "dpo"}, "VALIDATION_ERROR", "dataset"),  # the sample dataset is instruction rows
        ({"objective": "dpo", "params": {"beta": 0}}, "VALIDATION_ERROR", "params.beta"),
        ({"params": {"beta": 0.1}}, "VALIDATION_ERROR", "params.beta"),  # a DPO setting on an SFT run
        ({"params": {"target_modules": ["qkv_proj"]}}, "VALIDATION_ERROR", "params.target_modules"),
        ({"method": "ia3", "params": {"target_modules": ["c_attn"]}}, "VALIDATION_ERROR", "params.target_modules"),
        ({"method": "freeze", "params": {"trainable_layers": 5}}, "VALIDATION_ERROR", "params.trainable_layers"),
        ({"params": {"max_length": 4096}}, "VALIDATION_ERROR", "params.max_length"),  # the tiny model's context: 512
    ],
)
def test_bad_run_request_is_refused_and_writes_nothing(client, db_session, assets, sample_id, change, code, field):
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_id, **change}
    before = _run_count(db_session)
    response = client.post("/api/v1/runs", json=body)
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert error["code"] == code
    assert field in error["message"]
    assert _run_count(db_session) == before


def test_unknown_run_is_404_in_error_shape(client):
    response = client.get("/api/v1/runs/424242")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "RUN_NOT_FOUND"


def test_run_list_filters_sorts_and_pages(client, assets, sample_id):
    created = []
    for i in range(5):
        body = {"name": f"page-{i}", "method": "lora", "model": "tunelab-tiny", "dataset": sample_id,
                "queue": "nobody-listens"}
        created.append(client.post("/api/v1/runs", json=body).json()["id"])
    page = client.get("/api/v1/runs", params={"q": "page-", "limit": 2, "sort": "name", "order": "asc"}).json()
    assert [r["name"] for r in page["data"]] == ["page-0", "page-1"]
    assert page["count"] == 5
    second = client.get("/api/v1/runs", params={"q": "page-", "limit": 2, "sort": "name", "order": "asc",
                                                "cursor": page["next_cursor"]}).json()
    assert [r["name"] for r in second["data"]] == ["page-2", "page-3"]
    queued = client.get("/api/v1/runs", params={"status": "queued", "method": "lora", "q": "page-"}).json()
    assert queued["count"] == 5
    picked = client.get("/api/v1/runs", params={"ids": created[1:3]}).json()
    assert sorted(r["id"] for r in picked["data"]) == created[1:3] and picked["count"] == 2
    positions = [client.get(f"/api/v1/runs/{i}").json()["queue_position"] for i in created]
    assert positions == sorted(positions) and len(set(positions)) == 5
    for run_id in created:
        client.post(f"/api/v1/runs/{run_id}/cancel")
    assert client.get("/api/v1/runs", params={"q": "page-", "status": "canceled"}).json()["count"] == 5
    response = client.get("/api/v1/runs", params={"cursor": "garbage!"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "INVALID_CURSOR"


def test_clone_overrides_params_and_delete_removes_artifacts(client, assets, sample_id, settings):
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_id, "queue": "nobody-listens",
            "params": {"learning_rate": 0.001}}
    source = client.post("/api/v1/runs", json=body).json()
    clone = client.post(f"/api/v1/runs/{source['id']}/clone", json={"params": {"learning_rate": 0.0005}}).json()
    assert clone["config"]["params"]["learning_rate"] == 0.0005
    assert clone["config"]["params"]["lora_alpha"] == source["config"]["params"]["lora_alpha"]
    assert client.delete(f"/api/v1/runs/{source['id']}").json()["error"]["code"] == "RUN_NOT_FINISHED"
    client.post(f"/api/v1/runs/{source['id']}/cancel")
    folder = settings.artifact_dir / str(source["id"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stray.txt").write_text("x")
    assert client.delete(f"/api/v1/runs/{source['id']}").status_code == 204
    assert not folder.exists()
    assert client.get(f"/api/v1/runs/{source['id']}").status_code == 404


def test_artifact_download_cannot_escape_the_run_folder(client, db_session, assets, sample_id, settings):
    from tunelab.core.errors import AppError
    from tunelab.services.runs.artifacts import artifact_file

    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_id, "queue": "nobody-listens"}
    run = client.post("/api/v1/runs", json=body).json()
    assert (settings.data_dir / "tunelab.db").exists()
    # Encoded so that the HTTP client does not normalise the dots away before the server sees them.
    for path in ("..%2F..%2Ftunelab.db", "%2E%2E/%2E%2E/tunelab.db", "%2Fetc%2Fpasswd"):
        response = client.get(f"/api/v1/runs/{run['id']}/artifacts/{path}")
        assert response.status_code in (400, 404), path
        assert response.json()["error"]["code"] in ("INVALID_PATH", "ARTIFACT_NOT_FOUND")
    for path in ("../../tunelab.db", "/etc/passwd", "../1/train.log"):
        with pytest.raises(AppError) as refused:
            artifact_file(db_session, run["id"], path)
        assert refused.value.code == "INVALID_PATH"


def test_methods_publish_schemas_with_bounds(client):
    methods = client.get("/api/v1/methods").json()
    lora = next(m for m in methods["methods"] if m["name"] == "lora")
    props = lora["params_schema"]["properties"]
    assert "description" in props["learning_rate"] and "r" in props
    assert any(o["name"] == "sft" for o in methods["objectives"])
    assert lora["defaults"]["seed"] == props["seed"]["default"]
    dpo = next(o for o in methods["objectives"] if o["name"] == "dpo")
    assert dpo["dataset_formats"] == ["preference"] and "beta" in dpo["params_schema"]["properties"]
    assert dpo["method_defaults"]["lora"]["learning_rate"] < lora["defaults"]["learning_rate"]
    assert "rewards/margins" in dpo["metric_keys"] and not dpo["reports_perplexity"]
    qlora = next(m for m in methods["methods"] if m["name"] == "qlora")
    assert qlora["requires_cuda"] and not lora["requires_cuda"]


def test_models_lists_bundled_model_as_available(client, assets):
    models = {m["name"]: m for m in client.get("/api/v1/models").json()["data"]}
    assert models["tunelab-tiny"]["available"] is True
    # The test session's models dir has no SmolLM2: listed, not available, with the way to get it.
    assert models["smollm2-135m-instruct"]["available"] is False
    assert models["smollm2-135m-instruct"]["how_to_get"] == "make models"
    response = client.post("/api/v1/runs", json={"method": "lora", "model": "smollm2-135m-instruct", "dataset": 1})
    assert response.status_code == 422 and "make models" in response.json()["error"]["message"]


def test_openapi_declares_error_responses(client):
    spec = client.get("/api/v1/openapi.json").json()
    create = spec["paths"]["/api/v1/runs"]["post"]["responses"]
    assert "422" in create and "ErrorResponse" in str(create["422"])


def test_dpo_launch_takes_the_objective_defaults_and_scales_the_models_learning_rate(client, assets):
    preferences = find_bundled_dataset(lambda params: client.get("/api/v1/datasets", params=params).json(),
                                       "tiny-preferences")["id"]
    # A queue of its own that no worker consumes: the run stays queued, and no other test counts its position.
    body = {"objective": "dpo", "method": "lora", "model": "tunelab-tiny", "dataset": preferences,
            "queue": f"dpo-defaults-{SESSION_TAG}"}
    run = client.post("/api/v1/runs", json=body).json()
    params = run["config"]["params"]
    assert params["beta"] == 0.1 and params["loss_type"] == "sigmoid"
    tiny = next(m for m in client.get("/api/v1/models").json()["data"] if m["name"] == "tunelab-tiny")
    sft_learning_rate = tiny["param_defaults"]["lora"]["learning_rate"]
    assert params["learning_rate"] == pytest.approx(sft_learning_rate * 0.025)
