"""Method defaults follow common practice for real models; the bundled tiny model keeps its own demo defaults,
published by GET /models and filled in by POST /runs for the params a launch leaves out."""

import pytest

from tests.conftest import find_bundled_dataset
from tunelab.assets.build import TINY_PARAM_DEFAULTS


@pytest.fixture
def sample_id(client) -> int:
    return find_bundled_dataset(lambda params: client.get("/api/v1/datasets", params=params).json())["id"]


def _launched_params(client, params: dict | None = None, **body) -> dict:
    response = client.post("/api/v1/runs", json={"method": "lora", "params": {"max_steps": 1, **(params or {})}, **body})
    assert response.status_code == 201, response.text
    run = client.get(f"/api/v1/runs/{response.json()['id']}").json()
    client.delete(f"/api/v1/runs/{run['id']}")
    return run["config"]["params"]


def test_models_publish_the_tiny_models_defaults(client, assets):
    models = {m["name"]: m for m in client.get("/api/v1/models").json()["data"]}
    assert models["tunelab-tiny"]["param_defaults"]["lora"] == {"learning_rate": 5e-3, "lora_dropout": 0.0,
                                                                "warmup_ratio": 0.0}
    assert models["smollm2-135m-instruct"]["param_defaults"] == {}


def test_a_launch_on_the_tiny_model_gets_its_defaults_and_a_real_model_the_methods(client, assets, sample_id):
    tiny = _launched_params(client, model="tunelab-tiny", dataset=sample_id)
    assert (tiny["learning_rate"], tiny["lora_dropout"], tiny["warmup_ratio"]) == (5e-3, 0.0, 0.0)

    # The same weights named by their path are any model to the API: the method's defaults for real models.
    by_path = _launched_params(client, model=str(assets.models_dir / "tunelab-tiny"), dataset=sample_id)
    assert (by_path["learning_rate"], by_path["lora_dropout"], by_path["warmup_ratio"]) == (2e-4, 0.05, 0.03)

    chosen = _launched_params(client, model="tunelab-tiny", dataset=sample_id,
                              params={"learning_rate": 1e-3, "warmup_ratio": 0.1})
    assert (chosen["learning_rate"], chosen["lora_dropout"], chosen["warmup_ratio"]) == (1e-3, 0.0, 0.1)


def test_every_method_of_the_tiny_profile_takes_its_values(client):
    methods = {m["name"]: m for m in client.get("/api/v1/methods").json()["methods"]}
    for method, values in TINY_PARAM_DEFAULTS.items():
        if method in methods:
            properties = methods[method]["params_schema"]["properties"]
            assert set(values) <= set(properties), method
