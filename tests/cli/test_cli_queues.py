"""`tunelab runs launch` and `clone` refuse a queue the server does not declare (GET /queues) before posting: exit 2,
the flag (or the run file's key) named, the declared queues listed."""

import pytest
from sqlalchemy import select

from tests.api.teams_helpers import IDLE_QUEUE
from tests.worker.conftest import TINY_MODEL
from tunelab.db.models import Project, Run, RunStatus

LAUNCH = ("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks")


@pytest.fixture(params=["infer", "undeclared"])
def bad_queue(request, settings) -> str:
    return settings.infer_queue if request.param == "infer" else "nonexistent-queue"


def _assert_refused_by_the_cli(result, where: str, queue: str, settings) -> None:
    assert result.code == 2, result.stdout + result.stderr
    error = result.json()["error"]
    # The CLI's own refusal names the flag; the server's would name the body's field `queue`.
    assert error["code"] == "VALIDATION_ERROR" and error["details"] == {"field": where}
    assert error["message"].startswith(f"{where}: {queue!r} is not a training queue of this server; choose one of ")
    assert f"{settings.default_queue} (default)" in error["message"]
    assert all(name in error["message"] for name in settings.run_queue_list)


def test_launch_and_clone_refuse_an_undeclared_queue_before_posting(cli, api, db_session, settings, tmp_path,
                                                                    bad_queue):
    before = api.get("/runs", params={"limit": 1}).json()["count"]
    _assert_refused_by_the_cli(cli(*LAUNCH, "--queue", bad_queue, "--json"), "--queue", bad_queue, settings)
    run_file = tmp_path / "run.yaml"
    run_file.write_text(f"method: lora\nmodel: {TINY_MODEL}\ndataset: tiny-tasks\nqueue: {bad_queue}\n")
    _assert_refused_by_the_cli(cli("runs", "launch", "-f", str(run_file), "--json"), "run.yaml: queue", bad_queue,
                               settings)
    assert api.get("/runs", params={"limit": 1}).json()["count"] == before, "nothing was posted"

    project = db_session.scalars(select(Project).filter_by(name="default")).one()
    source = Run(project_id=project.id, name="clone-source", objective="sft", method="lora", model=TINY_MODEL,
                 dataset_id=None, config={"params": {}}, seed=0, queue=IDLE_QUEUE, status=RunStatus.canceled)
    db_session.add(source)
    db_session.commit()
    refused = cli("runs", "clone", str(source.id), "--queue", bad_queue, "--json")
    _assert_refused_by_the_cli(refused, "--queue", bad_queue, settings)
    assert api.get("/runs", params={"limit": 1}).json()["count"] == before + 1, "only the source"
