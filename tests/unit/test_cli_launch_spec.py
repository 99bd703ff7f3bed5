"""The CLI's launch checks against the real method registry's schema (GET /methods), without a server."""

import pytest

from tunelab.commands import launch_spec
from tunelab.commands.common import CommandError


@pytest.fixture(scope="module")
def methods() -> dict:
    from tunelab.api.routes.methods import read_methods

    return read_methods().model_dump(mode="json")


def checked(methods, params: list[str], **values):
    spec = launch_spec.LaunchSpec()
    launch_spec.add_flags(spec, {"method": "lora", "model": "tunelab-tiny", "dataset": "tiny-tasks", **values},
                          params)
    return launch_spec.check(spec, methods)


def refusal(methods, params: list[str], **values) -> str:
    with pytest.raises(CommandError) as raised:
        checked(methods, params, **values)
    assert raised.value.exit_code == 2
    return raised.value.message


def test_flag_text_takes_the_schemas_types(methods):
    params = checked(methods, ["r=8", "learning_rate=1e-4", "max_steps=null", "gradient_checkpointing=true",
                               "target_modules=q_proj,v_proj", "precision=bf16", "beta=0.2"],
                     objective="dpo")["params"]
    assert params == {"r": 8, "learning_rate": 1e-4, "max_steps": None, "gradient_checkpointing": True,
                      "target_modules": "q_proj,v_proj", "precision": "bf16", "beta": 0.2}
    assert checked(methods, ["target_modules=[\"q_proj\"]"])["params"]["target_modules"] == ["q_proj"]


def test_each_refusal_names_the_field(methods):
    assert refusal(methods, ["r=8.5"]).startswith("--param r: must be an integer")
    assert refusal(methods, ["max_steps=-1"]) == "--param max_steps: must be ≥ 0 or null (got -1)"
    assert "must be one of fp32, bf16, fp16" in refusal(methods, ["precision=fp8"])
    assert "lora/sft has no parameter 'beta'" in refusal(methods, ["beta=0.1"]), "beta is DPO's"
    assert refusal(methods, ["r"]) == "--param: 'r' is not NAME=VALUE"
    assert refusal(methods, [], method="lorra").startswith("--method: unknown method 'lorra'")
    assert refusal(methods, [], dataset=None) == "--dataset: required"


def test_a_files_keys_are_named_with_the_file(methods, tmp_path):
    run = tmp_path / "run.yaml"
    run.write_text("method: lora\nmodel: tunelab-tiny\ndataset: 3\nparams:\n  r: eight\n")
    spec = launch_spec.read_file(run)
    with pytest.raises(CommandError, match=r"^run.yaml: params.r: must be an integer \(got 'eight'\)$"):
        launch_spec.check(spec, methods)
    launch_spec.add_flags(spec, {}, ["r=4"])
    assert launch_spec.check(spec, methods)["params"] == {"r": 4}, "a flag wins over the file"
    run.write_text("method: lora\nparams: [1]\n")
    with pytest.raises(CommandError, match="run.yaml: params: must be a mapping"):
        launch_spec.read_file(run)


def test_a_run_started_from_another_needs_no_model(methods, tmp_path):
    assert refusal(methods, [], model=None) == "--model: required"
    started = checked(methods, [], model=None, base_run=12, objective="dpo")
    assert started["base_run"] == 12 and "model" not in started
    run = tmp_path / "dpo.yaml"
    run.write_text("method: lora\nobjective: dpo\nbase_run: 12\ndataset: tiny-preferences\n")
    assert launch_spec.check(launch_spec.read_file(run), methods)["base_run"] == 12


def test_the_launch_helps_example_is_a_launch_the_cli_accepts(methods, capsys):
    """`tunelab runs launch --help` showed `--param lora_r=8`, which the CLI then refused (LoRA's rank is `r`)."""
    import shlex

    from tunelab.cli import main

    with pytest.raises(SystemExit):
        main(["runs", "launch", "--help"])
    examples = [line.strip() for line in capsys.readouterr().out.splitlines()
                if line.strip().startswith("tunelab runs launch ")]
    assert examples
    for example in examples:
        words = shlex.split(example)[3:]
        flags = dict(zip(words[::2], words[1::2], strict=True))
        params = [value for flag, value in zip(words[::2], words[1::2], strict=True) if flag == "--param"]
        spec = checked(methods, params, method=flags["--method"], model=flags["--model"], dataset=flags["--dataset"])
        assert spec is not None
