"""A config larger than the server keeps for an external run does not fail the training script: the SDK shortens or
leaves out what does not fit, says so once, and the server takes the rest."""

import logging

import pytest

import tunelab
from tunelab.client import params as sdk
from tunelab.services.runs import external_runs as server


@pytest.fixture(autouse=True)
def private_spool(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNELAB_CONFIG", str(tmp_path / "no-config.json"))


def _oversized() -> dict:
    deep: object = 1
    for _ in range(server.MAX_PARAM_DEPTH + 2):
        deep = {"level": deep}
    return {"learning_rate": 2e-4, "prompt_template": "{x}" * 3_000, "deepspeed": deep,
            "fsdp_config": {"k" * 300: True}, "n" * 300: 1, **{f"arg{i}": i for i in range(server.MAX_PARAMS)}}


def test_the_sdk_bounds_are_the_servers():
    assert (sdk.MAX_PARAM_KEY_CHARS, sdk.MAX_PARAM_VALUE_CHARS, sdk.MAX_PARAM_DEPTH, sdk.MAX_PARAMS,
            sdk.MAX_PARAMS_CHARS) == (server.MAX_PARAM_KEY_CHARS, server.MAX_PARAM_VALUE_CHARS,
                                      server.MAX_PARAM_DEPTH, server.MAX_PARAMS, server.MAX_PARAMS_CHARS)
    big = {f"p{i}": "x" * 5_000 for i in range(20)}
    server.check_params(sdk.bounded_params(big))  # the total size too


def test_init_with_a_config_past_the_servers_bounds_creates_the_run_with_what_fits(api_server, api, admin_token,
                                                                                 caplog):
    with caplog.at_level(logging.WARNING, logger="tunelab.client"):
        run = tunelab.init(name="large config", config=_oversized(), url=api_server, token=admin_token)
    run.finish()

    params = api.get(f"/runs/{run.id}").json()["config"]["params"]
    assert params["learning_rate"] == 2e-4 and params["arg0"] == 0
    assert len(params["prompt_template"]) == server.MAX_PARAM_VALUE_CHARS and params["prompt_template"].endswith("…")
    assert isinstance(params["deepspeed"], str) and params["deepspeed"].startswith('{"level"')
    assert isinstance(params["fsdp_config"], str)
    assert "n" * 300 not in params and len(params) == server.MAX_PARAMS
    assert "larger than the server keeps" in caplog.text and "prompt_template" in caplog.text
