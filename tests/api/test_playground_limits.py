"""A user's share of the playground: at most `playground_max_in_flight` requests waiting or generating and
`playground_max_per_minute` sent within a minute, counted in Redis so that every API process holds the same count;
past either, 429 in the error shape with Retry-After, nothing stored or queued, and the other users unaffected.

No inference worker serves the test session's queue here, so every accepted request stays in flight."""

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.api.teams_helpers import (
    API,
    Member,
    add_member,
    create_member,
    create_team,
    error_of,
    launch_queued,
    stateless_client,
    upload_dataset,
)
from tunelab.core.redis import get_redis

LORA_ADAPTER = {"peft_type": "LORA", "r": 8, "base_model_name_or_path": "tunelab-tiny"}


@pytest.fixture(scope="module")
def world(app, admin_token, settings):
    """A project with a run the playground accepts (succeeded, an adapter saved), and a way to add editors to it."""
    from tunelab.db.models import Run, RunStatus
    from tunelab.db.session import session_scope

    with TestClient(app, headers={"Authorization": f"Bearer {admin_token}"}) as admin:
        http = stateless_client(app)
        team = create_team(app, admin, http, "playground-limits")
        dataset = upload_dataset(http, team.owner, team.project_id, rows=2)
        run = launch_queued(http, team.editor, team.project_id, dataset["id"])
        adapter = settings.artifact_dir / str(run["id"]) / "adapter"
        adapter.mkdir(parents=True, exist_ok=True)
        (adapter / "adapter_config.json").write_text(json.dumps(LORA_ADAPTER))
        with session_scope() as session:
            session.get(Run, run["id"]).status = RunStatus.succeeded

        def new_editor() -> Member:
            member = create_member(app, admin, "playground-user")
            add_member(http, team.owner, team.project_id, member.email, "editor")
            return member

        yield http, team.project_id, run["id"], new_editor


def _body(world) -> dict:
    _, project_id, run_id, _ = world
    return {"project_id": project_id, "run_ids": [run_id], "prompt": "Hi", "sampling": {"max_new_tokens": 512,
                                                                                       "ignore_eos": True}}


def _line_length(settings) -> int:
    return get_redis().zcard(f"{settings.redis_namespace}:playground:line:{settings.infer_queue}")


def test_past_the_in_flight_limit_a_user_is_refused_429_by_every_api_process_and_others_are_not(
        world, settings, api_server):
    http, _, _, new_editor = world
    alice, bob = new_editor(), new_editor()
    limit = settings.playground_max_in_flight
    process = httpx.Client(base_url=api_server, timeout=30)  # a second API process on the same Redis

    def send(client, who: Member):
        return client.post(f"{API}/playground", json=_body(world), headers=who.headers)

    waiting, line = get_redis().llen(settings.infer_queue), _line_length(settings)
    accepted = [send(http if i % 2 else process, alice) for i in range(limit)]
    assert [r.status_code for r in accepted] == [202] * limit, [r.text for r in accepted]

    for client in (http, process):
        refused = send(client, alice)
        error = error_of(refused, 429, "RATE_LIMITED")
        assert error["details"]["limit"] == "in_flight" and error["details"]["max"] == limit, error
        assert refused.headers["Retry-After"] == str(error["details"]["retry_after_s"]), refused.headers
    assert send(process, bob).status_code == 202, "another user's request is still accepted"

    assert get_redis().llen(settings.infer_queue) == waiting + limit + 1, "no message for a refused request"
    assert _line_length(settings) == line + limit + 1, "a refused request never waits in the line"
    process.close()


def test_past_the_per_minute_limit_a_user_is_refused_429_until_the_oldest_leaves_the_minute(
        world, settings, monkeypatch):
    http, _, _, new_editor = world
    alice, bob = new_editor(), new_editor()
    monkeypatch.setattr(settings, "playground_max_in_flight", 100)
    monkeypatch.setattr(settings, "playground_max_per_minute", 3)

    for _ in range(3):
        assert http.post(f"{API}/playground", json=_body(world), headers=alice.headers).status_code == 202
    refused = http.post(f"{API}/playground", json=_body(world), headers=alice.headers)
    error = error_of(refused, 429, "RATE_LIMITED")
    assert error["details"]["limit"] == "per_minute" and error["details"]["max"] == 3, error
    assert 1 <= error["details"]["retry_after_s"] <= 60, error
    assert refused.headers["Retry-After"] == str(error["details"]["retry_after_s"])
    assert "try again in" in error["message"]

    assert http.post(f"{API}/playground", json=_body(world), headers=bob.headers).status_code == 202
