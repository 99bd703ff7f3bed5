"""The inference worker never trains: a run that reaches it (queued on the inference queue before such runs were
refused at launch) fails with the reason, and the playground's worker stays free."""

import uuid

from sqlalchemy import select

from tests.conftest import wait_for
from tunelab.db.models import Project, Run, RunStatus
from tunelab.worker.broker import get_broker


def test_a_run_sent_to_the_inference_worker_fails_with_the_reason_untrained(api, db_session, start_worker, settings,
                                                                             sample_dataset):
    start_worker(settings.infer_queue)
    project = db_session.scalars(select(Project).filter_by(name="default")).one()
    run = Run(project_id=project.id, name="left-on-infer", objective="sft", method="lora", model="tunelab-tiny",
              dataset_id=sample_dataset["id"], config={"params": {"max_steps": 2}}, seed=0,
              queue=settings.infer_queue)
    db_session.add(run)
    db_session.commit()
    get_broker().send(run.id, settings.infer_queue, uuid.uuid4().hex)

    wait_for(lambda: api.get(f"/runs/{run.id}").json()["status"] != "queued", 120,
             message="the inference worker to answer the run")
    final = api.get(f"/runs/{run.id}").json()
    assert final["status"] == RunStatus.failed.value and final["started_at"] is None and final["worker"] is None
    assert final["status_reason"].startswith(f"queue {settings.infer_queue!r} is the inference queue")
    assert "clone the run onto one of" in final["status_reason"]
