"""Queues are declared, not typed: a run, a clone, a study and a resume name one of TUNELAB_RUN_QUEUES or are refused
(422 naming `queue` and listing the allowed ones) and nothing is written; the inference queue is never one of them."""

import uuid

import pytest
from sqlalchemy import func, select, update

from tests.conftest import find_bundled_dataset
from tunelab.core.redis import get_redis
from tunelab.db.models import Project, Run, RunStatus, Study
from tunelab.services.runs import workers

API = "/api/v1"
UNDECLARED = "nonexistent-queue"


@pytest.fixture
def sample_id(client) -> int:
    return find_bundled_dataset(lambda params: client.get(f"{API}/datasets", params=params).json())["id"]


@pytest.fixture(params=["infer", "undeclared"])
def bad_queue(request, settings) -> str:
    return settings.infer_queue if request.param == "infer" else UNDECLARED


def _counts(db_session) -> tuple[int, int]:
    db_session.rollback()
    return db_session.scalar(select(func.count(Run.id))), db_session.scalar(select(func.count(Study.id)))


def _assert_queue_refused(response, settings, queue: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["message"].startswith("queue: ") and repr(queue) in error["message"]
    assert all(name in error["message"] for name in settings.run_queue_list)
    assert error["details"] == [{"field": "queue", "message": error["message"].removeprefix("queue: "),
                                 "allowed": settings.run_queue_list}]


def test_a_run_on_an_undeclared_or_the_inference_queue_is_refused_and_writes_nothing(client, db_session, settings,
                                                                                      sample_id, bad_queue):
    before = _counts(db_session)
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_id, "queue": bad_queue}
    _assert_queue_refused(client.post(f"{API}/runs", json=body), settings, bad_queue)
    # An external run is never queued, but its queue is shown and filtered on like any other: the same rule.
    external = {"method": "lora", "model": "tunelab-tiny", "external": True, "queue": bad_queue}
    _assert_queue_refused(client.post(f"{API}/runs", json=external), settings, bad_queue)
    assert _counts(db_session) == before


def test_a_clone_onto_an_undeclared_queue_or_of_a_run_whose_queue_is_gone_is_refused(client, db_session, settings,
                                                                                      sample_id, bad_queue):
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_id, "queue": "nobody-listens"}
    source = client.post(f"{API}/runs", json=body).json()
    before = _counts(db_session)
    _assert_queue_refused(client.post(f"{API}/runs/{source['id']}/clone", json={"queue": bad_queue}), settings,
                          bad_queue)
    # A run launched before its queue was refused (or undeclared since) keeps it; a clone does not inherit it.
    db_session.execute(update(Run).where(Run.id == source["id"]).values(queue=bad_queue))
    db_session.commit()
    _assert_queue_refused(client.post(f"{API}/runs/{source['id']}/clone", json={}), settings, bad_queue)
    assert _counts(db_session) == before
    onto_declared = client.post(f"{API}/runs/{source['id']}/clone", json={"queue": "nobody-listens"})
    assert onto_declared.status_code == 201 and onto_declared.json()["queue"] == "nobody-listens"
    for run_id in (source["id"], onto_declared.json()["id"]):
        client.post(f"{API}/runs/{run_id}/cancel")


def test_a_study_on_an_undeclared_queue_is_refused_and_creates_no_study_and_no_run(client, db_session, settings,
                                                                                   sample_id, bad_queue):
    before = _counts(db_session)
    body = {"name": f"study-{uuid.uuid4().hex[:6]}", "model": "tunelab-tiny", "dataset_id": sample_id,
            "methods": ["lora"], "seeds": [1], "budget": {"max_steps": 2}, "queue": bad_queue}
    _assert_queue_refused(client.post(f"{API}/studies", json=body), settings, bad_queue)
    assert _counts(db_session) == before


def test_resuming_a_run_whose_queue_is_not_declared_is_refused(client, db_session, settings, sample_id):
    project = db_session.scalars(select(Project).filter_by(name="default")).one()
    run = Run(project_id=project.id, name="on-infer", objective="sft", method="lora", model="tunelab-tiny",
              dataset_id=sample_id, config={}, seed=0, queue=settings.infer_queue, status=RunStatus.failed)
    db_session.add(run)
    db_session.commit()
    response = client.post(f"{API}/runs/{run.id}/resume")
    _assert_queue_refused(response, settings, settings.infer_queue)
    db_session.refresh(run)
    assert run.status == RunStatus.failed


def test_the_declared_queues_are_listed_with_the_workers_seen_on_each(client, settings):
    def listed() -> dict:
        answer = client.get(f"{API}/queues")
        assert answer.status_code == 200, answer.text
        return answer.json()

    before = listed()
    assert [queue["name"] for queue in before["data"]] == settings.run_queue_list
    assert before["count"] == len(settings.run_queue_list) and settings.infer_queue not in settings.run_queue_list
    assert [queue["name"] for queue in before["data"] if queue["default"]] == [settings.default_queue]
    assert {queue["name"]: queue["workers"] for queue in before["data"]}["nobody-listens"] == 0
    # A worker's presence as `tunelab worker` announces it, in the session's real Redis.
    name = f"queues-test-{uuid.uuid4().hex[:6]}@host"
    workers.announce(name, ["nobody-listens"], [])
    try:
        after = listed()
    finally:
        get_redis().delete(workers._presence_prefix() + name)
    assert {queue["name"]: queue["workers"] for queue in after["data"]}["nobody-listens"] == 1


def test_listing_the_queues_needs_a_caller(anonymous_client):
    response = anonymous_client.get(f"{API}/queues")
    assert response.status_code == 401 and response.json()["error"]["code"] == "AUTH_REQUIRED"
