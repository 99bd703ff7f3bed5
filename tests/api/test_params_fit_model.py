"""A launch or an estimate whose params the model cannot take is refused at once (422 naming the param), not by the
worker once the run leaves the queue: target modules must be layers of the model, max_length must fit its context."""

import pytest

from tests.api.teams_helpers import API
from tunelab.training.registry import resolve_params

TINY = "tunelab-tiny"
TINY_LAYERS = ["down_proj", "embed_tokens", "gate_proj", "k_proj", "lm_head", "o_proj", "q_proj", "up_proj", "v_proj"]


@pytest.mark.parametrize("path", ["runs", "estimates"])
def test_a_target_module_the_model_lacks_is_refused_with_the_layers_it_has(client, path):
    response = client.post(f"{API}/{path}", json={"model": TINY, "method": "dora", "dataset": 987654,
                                                  "params": {"target_modules": ["q_proj", "query_key_value"]}})

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["message"].startswith("params.target_modules: the model has no layer 'query_key_value'")
    [detail] = error["details"]
    assert detail["field"] == "params.target_modules" and detail["unknown"] == ["query_key_value"]
    assert all(layer in detail["message"] for layer in TINY_LAYERS)


@pytest.mark.parametrize("target_modules", [
    "all-linear",
    ["q_proj", "v_proj"],
    ["self_attn.q_proj"],  # PEFT matches a name by the end of the layer's dotted name
    "v_proj",  # one name, as the launch form sends it
    r".*\.mlp\.(up|down)_proj",  # a single string is a regular expression over the whole name
])
def test_target_modules_the_model_has_are_accepted(client, target_modules):
    response = client.post(f"{API}/estimates", json={"model": TINY, "method": "lora",
                                                     "params": {"target_modules": target_modules}})

    assert response.status_code == 200, response.text


@pytest.mark.parametrize("method", ["lora", "dora"])
def test_one_target_module_name_given_as_a_string_means_that_layer(method):
    # As PEFT reads a string (a regular expression over the whole dotted name), "q_proj" would match no layer.
    assert resolve_params(method, {"target_modules": "q_proj"})["target_modules"] == ["q_proj"]
    assert resolve_params(method, {"target_modules": "all-linear"})["target_modules"] == "all-linear"
    assert resolve_params(method, {"target_modules": r".*\.q_proj"})["target_modules"] == r".*\.q_proj"


@pytest.mark.parametrize("pattern", [r".*\.attention\.dense", "(q|k"])  # matching no layer; not a regex at all
def test_a_target_module_regex_matching_no_layer_is_refused(client, pattern):
    response = client.post(f"{API}/estimates", json={"model": TINY, "method": "lora",
                                                     "params": {"target_modules": pattern}})

    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "params.target_modules"


@pytest.mark.parametrize(("method", "params", "accepted"), [
    ("lora", {"max_length": 512}, True),
    ("lora", {"max_length": 513}, False),
    ("prompt", {"max_length": 500, "num_virtual_tokens": 12}, True),
    ("prompt", {"max_length": 501, "num_virtual_tokens": 12}, False),  # virtual tokens are in front of each sequence
])
def test_max_length_must_fit_the_models_context(client, method, params, accepted):
    response = client.post(f"{API}/estimates", json={"model": TINY, "method": method, "params": params})

    if accepted:
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["message"].startswith("params.max_length:")
    assert "context of 512 tokens" in error["message"]
    assert error["details"][0] == {"field": "params.max_length", "message": error["message"].removeprefix(
        "params.max_length: "), "context_length": 512}
