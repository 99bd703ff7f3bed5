"""The deployment declares its training queues (TUNELAB_RUN_QUEUES): settings refuse the inference queue among them
and a default queue outside them at start-up, and `tunelab worker` refuses a worker that would train on the
inference queue."""

import os
import subprocess
import sys

import pytest
import yaml
from pydantic import ValidationError

from tests.unit.test_deploy_files import SECRET, _compose
from tunelab.core.settings import Settings
from tunelab.services.runs import run_queues


@pytest.fixture
def settings_from(monkeypatch, tmp_path):
    """Settings from the arguments alone: no TUNELAB_*QUEUE* variable and no .env file of the developer's."""
    for name in ("TUNELAB_QUEUES", "TUNELAB_RUN_QUEUES", "TUNELAB_DEFAULT_QUEUE", "TUNELAB_INFER_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    return lambda **values: Settings(_env_file=None, data_dir=tmp_path, **values)


def test_the_defaults_declare_the_cpu_queue_alone(settings_from):
    settings = settings_from()
    assert settings.run_queue_list == ["cpu"] and settings.default_queue == "cpu" and settings.infer_queue == "infer"


def test_several_queues_are_declared_comma_separated(settings_from):
    assert settings_from(run_queues=" cpu, gpu,gpu-80gb ,").run_queue_list == ["cpu", "gpu", "gpu-80gb"]


@pytest.mark.parametrize(("values", "named"), [
    ({"run_queues": "cpu,infer"}, "names the inference queue 'infer' (TUNELAB_INFER_QUEUE)"),
    ({"run_queues": "cpu,playground", "infer_queue": "playground"}, "names the inference queue 'playground'"),
    ({"run_queues": "infer", "default_queue": "infer"}, "names the inference queue 'infer'"),
    ({"run_queues": "cpu,gpu", "default_queue": "gpu-80gb"}, "TUNELAB_DEFAULT_QUEUE ('gpu-80gb') is not one of "
                                                            "TUNELAB_RUN_QUEUES (cpu, gpu)"),
    ({"run_queues": " , "}, "TUNELAB_RUN_QUEUES must declare at least one training queue"),
], ids=["infer", "renamed-infer", "infer-only", "default-undeclared", "none"])
def test_settings_refuse_the_inference_queue_or_an_undeclared_default_at_start_up(settings_from, values, named):
    with pytest.raises(ValidationError) as refused:
        settings_from(**values)
    assert named in str(refused.value)


def test_a_worker_on_the_inference_queue_and_a_training_queue_is_refused_and_one_alone_is_not(settings_from):
    settings = settings_from(run_queues="cpu,gpu")
    refusal = run_queues.worker_refusal(settings, ["cpu", "infer"])
    assert refusal is not None and "`tunelab worker --queues infer`" in refusal
    assert "`tunelab worker --queues cpu`" in refusal
    assert run_queues.worker_refusal(settings, ["infer"]) is None
    assert run_queues.worker_refusal(settings, ["cpu", "gpu"]) is None


def test_a_worker_on_a_queue_nobody_declared_is_warned(settings_from):
    settings = settings_from(run_queues="cpu,gpu")
    assert run_queues.worker_warnings(settings, ["cpu", "infer"]) == []
    warnings = run_queues.worker_warnings(settings, ["cpu", "gpu-80gb"])
    assert len(warnings) == 1 and "'gpu-80gb' is not one of TUNELAB_RUN_QUEUES (cpu, gpu)" in warnings[0]


def test_tunelab_worker_refuses_to_train_on_the_inference_queue_before_it_starts(tmp_path):
    env = {**os.environ, "TUNELAB_DATA_DIR": str(tmp_path)}
    infer = env["TUNELAB_INFER_QUEUE"]
    training = env["TUNELAB_DEFAULT_QUEUE"]
    started = subprocess.run([sys.executable, "-m", "tunelab.cli", "worker", "--queues", f"{training},{infer}"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 1
    assert f"tunelab worker: the inference queue {infer!r} needs a worker of its own" in started.stderr
    assert "ready." not in started.stdout + started.stderr


def test_docker_compose_declares_the_queue_of_every_training_worker_and_not_the_playgrounds(settings_from):
    config = yaml.safe_load(_compose(SECRET).stdout)
    services = config["services"]
    api = settings_from(run_queues=services["api"]["environment"]["TUNELAB_RUN_QUEUES"])
    for name, service in services.items():
        command = service.get("command") or []
        if command[:2] != ["tunelab", "worker"]:
            continue
        queues = command[command.index("--queues") + 1].split(",")
        # The workers share the API's settings: each starts, and each training queue gets the runs sent to it.
        assert run_queues.worker_refusal(api, queues) is None, name
        assert run_queues.worker_warnings(api, queues) == [], name
        assert (queues == [api.infer_queue]) == (name == "worker-infer"), name
