"""Launches are safe to retry: POST /runs, clone and studies with an Idempotency-Key create once per key and caller.

A retry gets the first try's run (201, `Idempotent-Replayed: true`); the same key with another body is a 422 naming
the header; keys are the caller's, kept for a bounded time, and a refused launch leaves none behind. Real API, real
SQL (the session's SQLite; PostgreSQL for the concurrent retry that waits on the key)."""

import threading
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from tests.api.teams_helpers import API, IDLE_QUEUE, error_of, team_fixture, unique
from tests.conftest import find_bundled_dataset, wait_for
from tunelab.core.errors import AppError
from tunelab.db.base import utcnow
from tunelab.db.models import IdempotencyKey, Run, Study, User
from tunelab.db.session import make_engine
from tunelab.services.runs import idempotency

team = team_fixture("idem")


@pytest.fixture(scope="module")
def sample_id(admin) -> int:
    return find_bundled_dataset(lambda params: admin.get(f"{API}/datasets", params=params).json())["id"]


def run_body(team, sample_id, **changes) -> dict:
    return {"project_id": team.project_id, "name": unique("idem"), "method": "lora", "model": "tunelab-tiny",
            "dataset": sample_id, "queue": IDLE_QUEUE, "params": {"max_steps": 2, "max_length": 64}, **changes}


def keyed(who, key: str) -> dict[str, str]:
    return {**who.headers, "Idempotency-Key": key}


def runs_named(db_session, name: str) -> list[int]:
    db_session.rollback()  # a fresh read: the API committed in its own session
    return list(db_session.scalars(select(Run.id).where(Run.name == name)))


def test_a_launch_retried_with_the_same_key_yields_one_run(http, team, sample_id, db_session):
    body, key = run_body(team, sample_id), str(uuid.uuid4())
    first = http.post(f"{API}/runs", json=body, headers=keyed(team.editor, key))
    assert first.status_code == 201, first.text
    assert "Idempotent-Replayed" not in first.headers
    retry = http.post(f"{API}/runs", json=body, headers=keyed(team.editor, key))
    assert retry.status_code == 201, retry.text
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json()["id"] == first.json()["id"] and retry.json()["name"] == body["name"]
    assert runs_named(db_session, body["name"]) == [first.json()["id"]]

    # The same key from another caller is that caller's own: a run of theirs.
    theirs = http.post(f"{API}/runs", json=body, headers=keyed(team.owner, key))
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs.headers
    assert sorted(runs_named(db_session, body["name"])) == sorted([first.json()["id"], theirs.json()["id"]])

    # Without a key, each POST is a launch, as before.
    plain = run_body(team, sample_id)
    assert http.post(f"{API}/runs", json=plain, headers=team.editor.headers).status_code == 201
    assert http.post(f"{API}/runs", json=plain, headers=team.editor.headers).status_code == 201
    assert len(runs_named(db_session, plain["name"])) == 2


def test_the_same_key_with_another_body_is_refused_and_creates_nothing(http, team, sample_id, db_session):
    body, key = run_body(team, sample_id), str(uuid.uuid4())
    assert http.post(f"{API}/runs", json=body, headers=keyed(team.editor, key)).status_code == 201
    other = {**body, "name": unique("other")}
    error = error_of(http.post(f"{API}/runs", json=other, headers=keyed(team.editor, key)), 422,
                     "IDEMPOTENCY_KEY_REUSED")
    assert error["details"]["field"] == "Idempotency-Key" and error["details"]["first_used_for"] == "POST /api/v1/runs"
    assert runs_named(db_session, other["name"]) == []
    source = runs_named(db_session, body["name"])[0]
    # Another endpoint is another request too.
    error_of(http.post(f"{API}/runs/{source}/clone", json={}, headers=keyed(team.editor, key)), 422,
             "IDEMPOTENCY_KEY_REUSED")


def test_a_refused_launch_leaves_no_key_so_its_corrected_retry_launches(http, team, sample_id, db_session):
    key = str(uuid.uuid4())
    bad = run_body(team, sample_id, params={"max_steps": 2, "r": "eight"})
    error_of(http.post(f"{API}/runs", json=bad, headers=keyed(team.editor, key)), 422, "VALIDATION_ERROR")
    good = run_body(team, sample_id)
    launched = http.post(f"{API}/runs", json=good, headers=keyed(team.editor, key))
    assert launched.status_code == 201 and "Idempotent-Replayed" not in launched.headers, launched.text
    assert runs_named(db_session, good["name"]) == [launched.json()["id"]]


def test_a_bad_key_is_a_422_naming_the_header(http, team, sample_id):
    for key in ("", "x" * 256, "spaces are not allowed", "é"):
        error = error_of(http.post(f"{API}/runs", json=run_body(team, sample_id),
                                   headers={**team.editor.headers, "Idempotency-Key": key.encode()}),
                         422, "VALIDATION_ERROR")
        assert "Idempotency-Key" in error["message"], error


def test_clone_and_studies_retried_with_the_same_key_launch_once(http, team, sample_id, db_session):
    source = http.post(f"{API}/runs", json=run_body(team, sample_id), headers=team.editor.headers).json()
    clone_key, clone_body = str(uuid.uuid4()), {"name": unique("clone"), "params": {"r": 4}}
    clones = [http.post(f"{API}/runs/{source['id']}/clone", json=clone_body, headers=keyed(team.editor, clone_key))
              for _ in range(2)]
    assert [c.status_code for c in clones] == [201, 201]
    assert clones[0].json()["id"] == clones[1].json()["id"] and clones[1].headers["Idempotent-Replayed"] == "true"
    assert runs_named(db_session, clone_body["name"]) == [clones[0].json()["id"]]

    study_body = {"project_id": team.project_id, "name": unique("study"), "model": "tunelab-tiny",
                  "dataset_id": sample_id, "methods": ["lora"], "seeds": [1], "budget": {"max_steps": 2},
                  "params": {"max_length": 64}, "queue": IDLE_QUEUE}
    study_key = str(uuid.uuid4())
    studies = [http.post(f"{API}/studies", json=study_body, headers=keyed(team.editor, study_key)) for _ in range(2)]
    assert [s.status_code for s in studies] == [201, 201], studies[0].text
    study_id = studies[0].json()["study"]["id"]
    assert studies[1].headers["Idempotent-Replayed"] == "true" and studies[1].json() == studies[0].json()
    db_session.rollback()
    assert db_session.scalar(select(func.count(Study.id)).where(Study.name == study_body["name"])) == 1

    extend_key = str(uuid.uuid4())
    for _ in range(2):
        extended = http.post(f"{API}/studies/{study_id}/runs", json={"seeds": [2]}, headers=keyed(team.editor,
                                                                                                     extend_key))
        assert extended.status_code == 201, extended.text
    db_session.rollback()
    assert db_session.scalar(select(func.count(Run.id)).where(Run.study_id == study_id)) == 2

    clone_study_key, clone_study_body = str(uuid.uuid4()), {"name": unique("study-clone")}
    cloned = [http.post(f"{API}/studies/{study_id}/clone", json=clone_study_body,
                        headers=keyed(team.editor, clone_study_key)) for _ in range(2)]
    assert [c.status_code for c in cloned] == [201, 201] and cloned[1].headers["Idempotent-Replayed"] == "true"
    assert cloned[0].json() == cloned[1].json()


def test_keys_are_forgotten_after_their_time(http, team, sample_id, db_session, settings):
    body, key = run_body(team, sample_id), str(uuid.uuid4())
    first = http.post(f"{API}/runs", json=body, headers=keyed(team.editor, key)).json()
    db_session.rollback()
    aged = utcnow() - timedelta(hours=settings.idempotency_key_ttl_hours, minutes=1)
    db_session.execute(update(IdempotencyKey).where(IdempotencyKey.user_id == team.editor.user_id,
                                                    IdempotencyKey.key == key).values(created_at=aged))
    db_session.commit()
    again = http.post(f"{API}/runs", json=body, headers=keyed(team.editor, key))
    assert again.status_code == 201 and again.json()["id"] != first["id"]
    assert "Idempotent-Replayed" not in again.headers

    # The reaper's purge removes what is past its time and keeps the rest.
    other_key = str(uuid.uuid4())
    assert http.post(f"{API}/runs", json=run_body(team, sample_id), headers=keyed(team.editor, other_key)).status_code \
        == 201
    db_session.execute(update(IdempotencyKey).where(IdempotencyKey.key == other_key).values(created_at=aged))
    db_session.commit()
    assert idempotency.purge_expired(db_session, settings) >= 1
    db_session.commit()
    kept = set(db_session.scalars(select(IdempotencyKey.key).where(IdempotencyKey.key.in_([key, other_key]))))
    assert kept == {key}


def test_the_openapi_document_declares_the_header(http):
    document = http.get(f"{API}/openapi.json").json()
    for path in ("/api/v1/runs", "/api/v1/runs/{run_id}/clone", "/api/v1/studies", "/api/v1/studies/{study_id}/clone",
                 "/api/v1/studies/{study_id}/runs"):
        operation = document["paths"][path]["post"]
        headers = [p for p in operation["parameters"] if p["in"] == "header"]
        assert [h["name"] for h in headers] == ["Idempotency-Key"], path
        assert "Idempotent-Replayed" in operation["responses"]["201"]["headers"], path


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_retry_sent_while_the_first_try_is_in_flight_is_refused_and_then_gets_its_run(database, request, settings):
    """Two transactions with one key: the second, sent before the first committed, waits for it on the key
    (PostgreSQL's unique index; SQLite's one writer) and is refused with 409, its launch rolled back; sent again, it
    gets the first one's id without launching."""
    url = request.getfixturevalue("migrated_db" if database == "sqlite" else "migrated_pg")
    engine = make_engine(url)
    try:
        with Session(engine) as setup:
            user = User(email=f"{unique('idem')}@tunelab.test", display_name="idem")
            setup.add(user)
            setup.commit()
            user_id = user.id
        keyed_request = idempotency.keyed_request(user_id, str(uuid.uuid4()), "POST /api/v1/runs", {"name": "x"})
        launches: list[str] = []

        def launch(name: str, resource_id: int):
            def launched() -> int:
                launches.append(name)
                return resource_id
            return launched

        refused: list[str] = []

        def send_second() -> None:
            with Session(engine) as session:
                try:
                    idempotency.launch_once(session, settings, keyed_request, launch("second", 1))
                except AppError as error:
                    refused.append(error.code)

        with Session(engine) as first:
            assert idempotency.launch_once(first, settings, keyed_request, launch("first", 4242)) \
                == idempotency.Launched(4242, replayed=False)
            second = threading.Thread(target=send_second)
            second.start()
            wait_for(lambda: "second" in launches, 30, message="the second request to launch")
            if database == "postgres":
                # The second transaction waits on the first one's key, not merely slow to start. In autocommit:
                # PostgreSQL keeps one view of pg_stat_activity for a whole transaction.
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
                    wait_for(lambda: watcher.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                                         "current_database() AND wait_event_type = 'Lock'")), 30,
                             message="the second request to wait on the key")
            first.commit()
        second.join(30)
        assert refused == ["IDEMPOTENCY_KEY_IN_USE"]

        with Session(engine) as retry:
            assert idempotency.launch_once(retry, settings, keyed_request, launch("retry", 7)) \
                == idempotency.Launched(4242, replayed=True)
        assert launches == ["first", "second"]
    finally:
        engine.dispose()
