"""The rules of a lost run, on the session's database (one transaction per test, rolled back): it resumes from its
checkpoint a bounded number of times in a row and then fails with the reason; a run whose stop was asked for ends
canceled; a stale training process or a second reaper changes nothing; a user's resume starts the count again."""

import pytest

from tunelab.core.errors import AppError
from tunelab.db.base import utcnow
from tunelab.db.models import Project, Run, RunStatus
from tunelab.services.accounts.principal import SYSTEM
from tunelab.services.runs import lifecycle, runs


class NoBroker:
    """Resume sends after commit; these tests roll back, so nothing is ever sent."""

    def epoch(self) -> str:
        raise AssertionError("nothing is sent before the commit")

    send = held_message_ids = held_train_messages = discard_messages = epoch


@pytest.fixture
def running(db_session, assets):
    def make(**values) -> Run:
        project = db_session.query(Project).filter_by(name="default").one()
        fields = {"project_id": project.id, "name": "lost", "objective": "sft", "method": "lora",
                  "model": "tunelab-tiny", "dataset_id": None, "config": {}, "seed": 0, "queue": "nobody",
                  "status": RunStatus.running, "attempt": 1, "started_at": utcnow(), "heartbeat_at": utcnow(),
                  "current_step": 12, "checkpoint_step": 10}
        run = Run(**{**fields, **values})
        db_session.add(run)
        db_session.flush()
        return run

    return make


def test_a_lost_run_resumes_from_its_checkpoint_until_the_bound_then_fails_with_the_reason(db_session, running,
                                                                                           settings):
    bounded = settings.model_copy(update={"max_auto_resumes": 2})
    run = running()
    for resume in (1, 2):
        status = lifecycle.training_lost(db_session, bounded, run.id, "the training process was killed by SIGKILL")
        db_session.refresh(run)
        assert status == RunStatus.queued and run.status == RunStatus.queued
        assert run.auto_resumes == resume and run.dispatch_id is None and run.worker is None
        assert run.status_reason == ("the training process was killed by SIGKILL at step 12; resuming from "
                                     f"checkpoint at step 10 (automatic resume {resume} of 2)")
        claim = lifecycle.claim_run(db_session, run.id, "another-worker")
        assert claim is not None and claim.start_step == 10 and claim.attempt == resume + 1
    assert lifecycle.training_lost(db_session, bounded, run.id, "worker lost: no heartbeat for 60 s") == \
        RunStatus.failed
    db_session.refresh(run)
    assert run.status_reason == "worker lost: no heartbeat for 60 s at step 12; gave up after 2 automatic resumes"
    assert run.finished_at is not None


def test_a_lost_run_whose_stop_was_asked_for_ends_canceled(db_session, running, settings):
    run = running(cancel_requested=True)
    assert lifecycle.training_lost(db_session, settings, run.id, "worker lost") == RunStatus.canceled
    db_session.refresh(run)
    assert run.status == RunStatus.canceled and run.status_reason == "canceled; worker lost at step 12"


def test_a_stale_attempt_or_a_second_reaper_changes_nothing(db_session, running, settings):
    run = running(attempt=3)
    assert lifecycle.training_lost(db_session, settings, run.id, "killed", attempt=2) is None
    assert not lifecycle.finish_run(db_session, run.id, RunStatus.succeeded, attempt=2)
    assert not lifecycle.is_current_attempt(db_session, run.id, 2)
    assert lifecycle.training_lost(db_session, settings, run.id, "killed", attempt=3) == RunStatus.queued
    assert lifecycle.training_lost(db_session, settings, run.id, "killed", attempt=3) is None, "only once"


def test_a_users_resume_starts_the_count_of_automatic_resumes_again(db_session, running, settings, sample_dataset_id):
    run = running(dataset_id=sample_dataset_id, auto_resumes=2)
    lifecycle.training_lost(db_session, settings.model_copy(update={"max_auto_resumes": 2}), run.id, "killed")
    db_session.refresh(run)
    assert run.status == RunStatus.failed
    runs.request_resume(db_session, settings, run.id, NoBroker(), SYSTEM)
    db_session.refresh(run)
    assert run.status == RunStatus.queued and run.auto_resumes == 0 and run.finished_at is None
    assert run.status_reason == "resumed by system from step 10"
    with pytest.raises(AppError) as refused:
        runs.request_resume(db_session, settings, run.id, NoBroker(), SYSTEM)
    assert refused.value.code == "RUN_NOT_RESUMABLE"


@pytest.fixture
def sample_dataset_id(db_session, client) -> int:
    """The bundled sample dataset (the app registers it when it starts)."""
    from tunelab.db.models import Dataset

    return db_session.query(Dataset).filter_by(bundled=True).first().id
