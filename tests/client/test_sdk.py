"""The SDK against a real `tunelab api`: points batched and delivered exactly once across an API killed and restarted
mid-run (log() never waits for it), a run ended by its script or by an exception, spools an earlier process left,
the HTTP layer's error shape, and an import that needs no torch."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import tunelab
from tests.conftest import ApiProcess, wait_for
from tunelab.client.config import ClientConfig
from tunelab.client.http import ApiClient, ServerUnreachable, TunelabError
from tunelab.client.run import spool_path_for

# Generous for a busy 2-core CI machine: a log() that waited for the network would take a connect timeout or more.
SLOWEST_LOG_S = 0.05


@pytest.fixture(autouse=True)
def private_spool(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNELAB_CONFIG", str(tmp_path / "no-config.json"))


def _steps(api: httpx.Client, run_id: int, key: str = "train/loss") -> list[int]:
    response = api.get(f"/runs/{run_id}/metrics", params={"keys": key, "max_points": 100_000})
    assert response.status_code == 200, response.text
    series = response.json()["series"]
    return series[0]["step"] if series else []


def _kill(server: ApiProcess) -> None:
    os.killpg(server.proc.pid, signal.SIGKILL)  # the API's whole process group, with no goodbye
    server.proc.wait(timeout=15)


def test_points_logged_while_the_api_is_down_are_delivered_exactly_once_and_log_never_waits(
        tmp_path, api, admin_token, migrated_db, assets, redis_url):
    server = ApiProcess(tmp_path / "api.log")
    try:
        run = tunelab.init(name="killed api", config={"learning_rate": 2e-4}, url=server.base_url, token=admin_token,
                           flush_interval_s=0.2)
        slowest = {"up": 0.0, "down": 0.0}

        def log(steps: range, phase: str) -> None:
            for step in steps:
                started = time.perf_counter()
                run.log({"train/loss": 1.0 / (step + 1), "train/learning_rate": 2e-4}, step=step)
                slowest[phase] = max(slowest[phase], time.perf_counter() - started)
                time.sleep(0.005)  # the training step

        log(range(0, 100), "up")
        wait_for(lambda: run._sender.delivered >= 200, 30, message="the first points to arrive")
        _kill(server)
        log(range(100, 300), "down")
        wait_for(lambda: run.spool_path.exists(), 30, message="points spooled while the API is down")
        assert run._sender.server_down
        server = ApiProcess(tmp_path / "api-again.log", port=server.port)
        log(range(300, 350), "up")
        run.finish()

        assert run.status == "succeeded"
        assert _steps(api, run.id) == list(range(350))  # every step, each once, whatever was sent twice
        assert _steps(api, run.id, "train/learning_rate") == list(range(350))
        assert not run.spool_path.exists()
        assert slowest["down"] < SLOWEST_LOG_S, slowest
        assert api.get(f"/runs/{run.id}").json()["status"] == "succeeded"
    finally:
        server.stop()


def test_a_run_is_batched_auto_stepped_and_an_exception_ends_it_failed(api_server, api, admin_token, caplog):
    with pytest.raises(RuntimeError, match="diverged"):
        with tunelab.init(name="raises", url=api_server, token=admin_token, model="my-org/tiny",
                          config={"path": Path("/data/train.jsonl"), "nested": {"lr": 1e-3, "bad": float("nan")}}) as run:
            for loss in (3.0, 2.0, 1.0):
                run.log({"train/loss": loss, "train/note": "not a number", "": 1.0})
            raise RuntimeError("loss diverged")

    assert run.status == "failed"
    public = api.get(f"/runs/{run.id}").json()
    assert public["status"] == "failed" and public["status_reason"] == "RuntimeError: loss diverged"
    assert public["external"] and public["model"] == "my-org/tiny"
    assert public["config"]["params"] == {"path": "/data/train.jsonl", "nested": {"lr": 1e-3, "bad": "nan"}}
    assert _steps(api, run.id) == [0, 1, 2]
    assert _steps(api, run.id, "train/note") == []
    assert "not a number" in caplog.text
    run.log({"train/loss": 0.5})  # after finish: ignored with a warning, not an error
    assert "ignored" in caplog.text


def test_init_with_run_id_delivers_the_spool_an_earlier_process_left(api_server, api, admin_token):
    first = tunelab.init(name="spooled", url=api_server, token=admin_token)
    spool = spool_path_for(api_server, first.id)
    spool.parent.mkdir(parents=True, exist_ok=True)
    spool.write_text('["train/loss", 0, 2.5, 1.7e9]\n["train/loss", 1, 2.0, 1.7e9]\n["train/lo', encoding="utf-8")
    first._closed = True  # the earlier process died without finishing

    again = tunelab.init(url=api_server, token=admin_token, run_id=first.id)
    again.log({"train/loss": 1.5}, step=2)
    again.finish()

    assert _steps(api, first.id) == [0, 1, 2] and not spool.exists()
    assert again.status == "succeeded"
    with pytest.raises(TunelabError) as refused:
        tunelab.init(url=api_server, token=admin_token, run_id=first.id)
    assert refused.value.code == "RUN_NOT_LOGGABLE"


def test_the_http_layer_turns_errors_into_tunelab_errors_and_streams_events(api_server, admin_token):
    with ApiClient(ClientConfig(api_server, admin_token)) as client:
        with pytest.raises(TunelabError) as missing:
            client.get("/runs/999999999")
        run = client.post("/runs", json={"external": True, "method": "custom", "model": "m", "name": "sse"})
        client.post(f"/runs/{run['id']}/metrics", json={"points": [{"key": "train/loss", "step": 1, "value": 1.0}]})
        client.post(f"/runs/{run['id']}/finish", json={"status": "succeeded"})
        events = list(client.stream_sse(f"/runs/{run['id']}/events"))
    with ApiClient(ClientConfig(api_server, "tl_not-a-token")) as stranger, pytest.raises(TunelabError) as refused:
        stranger.get("/runs")
    with ApiClient(ClientConfig("http://127.0.0.1:9", None)) as nobody, pytest.raises(ServerUnreachable):
        nobody.get("/health")

    assert (missing.value.code, missing.value.status) == ("RUN_NOT_FOUND", 404)
    assert refused.value.status == 401 and refused.value.code in ("INVALID_TOKEN", "AUTH_REQUIRED")
    assert events and all(isinstance(event, str) for _, event, _ in events)
    assert any(event_id is not None for event_id, _, _ in events)


def test_the_sdk_imports_without_torch_or_transformers():
    script = ("import sys; sys.modules['torch'] = None\n"
              "import tunelab, tunelab.client.http, tunelab.client.run\n"
              "assert callable(tunelab.init)\n"
              "assert 'transformers' not in sys.modules and 'tunelab.training' not in sys.modules, sorted(sys.modules)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


@pytest.mark.parametrize(("ending", "status", "reason"), [
    ("", "succeeded", None),
    ("raise RuntimeError('the script crashed')", "failed", "RuntimeError: the script crashed"),
])
def test_a_script_that_never_calls_finish_ends_its_run_at_exit(api_server, api, admin_token, tmp_path, ending, status,
                                                               reason):
    script = ("import tunelab\n"
              "run = tunelab.init(name='ends at exit')\n"
              "run.log({'train/loss': 1.0})\n"
              "print(run.id, flush=True)\n" + ending + "\n")
    env = {**os.environ, "TUNELAB_URL": api_server, "TUNELAB_TOKEN": admin_token}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)

    run = api.get(f"/runs/{int(done.stdout.split()[0])}").json()
    assert (run["status"], run["status_reason"]) == (status, reason), done.stderr
    assert _steps(api, run["id"]) == [0]


def test_points_the_server_refuses_for_good_are_not_retried_and_finish_does_not_hang(api_server, api, admin_token,
                                                                                     caplog):
    run = tunelab.init(name="deleted meanwhile", url=api_server, token=admin_token, flush_interval_s=0.1)
    assert api.post(f"/runs/{run.id}/cancel").status_code == 200
    assert api.delete(f"/runs/{run.id}").status_code == 204

    run.log({"train/loss": 1.0}, step=0)
    wait_for(lambda: run._sender.rejected == 1, 30, message="the refused point to be counted")
    started = time.monotonic()
    run.finish()

    assert time.monotonic() - started < 10
    assert not run.spool_path.exists() and "RUN_NOT_FOUND" in caplog.text
