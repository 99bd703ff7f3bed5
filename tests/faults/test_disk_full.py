"""A disk that fills up while a run writes a checkpoint: the run fails with a reason that names the cause and the
folder (not the writer's `basic_ios::clear: iostream error`), leaves no half-written checkpoint, and resumes to
success once there is room again.

The full disk is real: a 16 KiB tmpfs mounted on the run's checkpoints folder before a worker claims the run, so the
configuration, tokenizer and log are written elsewhere and the first checkpoint is what finds no room. Mounting
needs root (as CI runs); elsewhere the test skips with the reason, except under CI=true, where it fails."""

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.conftest import ApiProcess, WorkerProcess, find_bundled_dataset, first_admin_tokens, fresh_install
from tests.worker.conftest import TINY_MODEL, wait_finished


def _mount_tiny_tmpfs(folder: Path) -> None:
    folder.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        why = f"cannot mount a small tmpfs to fill ({mounted.stderr.strip() or 'mount failed'}; needs root)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


def _unmount(folder: Path) -> None:
    subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.fixture
def stack(assets, redis_url, tmp_path):
    env = fresh_install(tmp_path, assets, "diskfull")
    server = ApiProcess(tmp_path / "api.log", env)
    token = first_admin_tokens(server.base_url, "diskfull")[0]["token"]
    with httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30,
                      headers={"Authorization": f"Bearer {token}"}) as api:
        try:
            yield api, env, tmp_path
        finally:
            server.stop()


def test_a_full_disk_during_a_checkpoint_fails_the_run_saying_so_and_it_resumes_once_there_is_room(stack):
    api, env, folder = stack
    dataset = find_bundled_dataset(lambda params: api.get("/datasets", params=params).json())
    body = {"method": "lora", "model": TINY_MODEL, "dataset": dataset["id"],
            "params": {"max_steps": 6, "checkpoint_every_steps": 2, "eval_steps": 100}}
    run = api.post("/runs", json=body)
    assert run.status_code == 201, run.text
    run_id = run.json()["id"]
    checkpoints = Path(env["TUNELAB_DATA_DIR"]) / "artifacts" / str(run_id) / "checkpoints"
    _mount_tiny_tmpfs(checkpoints)
    worker = WorkerProcess(folder / "worker.log", env=env)
    try:
        worker.wait_ready()
        failed = wait_finished(api, run_id)

        assert failed["status"] == "failed", failed["status_reason"]
        reason = failed["status_reason"]
        assert "no space left on device" in reason and "checkpoints/checkpoint-2" in reason, reason
        assert "iostream" not in reason and str(folder) not in reason, reason
        assert not list(checkpoints.glob("checkpoint-*")), "the partial checkpoint is removed"

        _unmount(checkpoints)
        resumed = api.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 200, resumed.text
        final = wait_finished(api, run_id)
        assert final["status"] == "succeeded", final["status_reason"]
        assert final["progress"]["current_step"] == 6
    finally:
        worker.stop()
        _unmount(checkpoints)
