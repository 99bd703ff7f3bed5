"""POST /playground: what it checks before anything reaches the inference queue (validation, roles, run state and
weights, one base model), and what it queues; GET /runs/{id}/samples."""

import json
import uuid

import pytest
from fastapi.testclient import TestClient

from tests.api.teams_helpers import (
    API,
    IDLE_QUEUE,
    create_share,
    create_team,
    launch_queued,
    share_header,
    stateless_client,
    upload_dataset,
)
from tunelab.core.redis import get_redis

LORA_ADAPTER = {"peft_type": "LORA", "r": 8, "base_model_name_or_path": "tunelab-tiny"}


@pytest.fixture(scope="module")
def team(app, admin_token):
    with TestClient(app, headers={"Authorization": f"Bearer {admin_token}"}) as admin:
        http = stateless_client(app)
        built = create_team(app, admin, http, "playground")
        dataset = upload_dataset(http, built.owner, built.project_id, rows=4)
        yield built, http, dataset


@pytest.fixture(autouse=True)
def _no_in_flight_limit(settings, monkeypatch):
    """No worker serves this module's requests, so each stays in flight: the per-user limits are
    test_playground_limits.py's."""
    monkeypatch.setattr(settings, "playground_max_in_flight", 1000)


def _finished_run(team, settings, status: str = "succeeded", weights: bool = True, model_path: str | None = None,
                  objective: str | None = None):
    """A real run of the team's project (its queue has no worker), set finished in SQL as a worker would leave it."""
    from tunelab.db.models import Run, RunStatus
    from tunelab.db.session import session_scope

    built, http, dataset = team
    run = launch_queued(http, built.editor, built.project_id, dataset["id"])
    folder = settings.artifact_dir / str(run["id"])
    if weights:
        (folder / "adapter").mkdir(parents=True, exist_ok=True)
        (folder / "adapter" / "adapter_config.json").write_text(json.dumps(LORA_ADAPTER))
    with session_scope() as session:
        row = session.get(Run, run["id"])
        row.status = RunStatus(status)
        if model_path is not None:
            row.config = {**row.config, "model_path": model_path}
        if objective is not None:  # as if trained with it (a reward model: a score head, nothing generates)
            row.objective = objective
            row.config = {**row.config, "objective": objective}
    return run


def _post(team, body: dict, who: str = "editor"):
    built, http, _ = team
    return http.post(f"{API}/playground", json={"project_id": built.project_id, **body},
                     headers=getattr(built, who).headers)


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


def test_a_request_gets_one_slot_per_model_and_is_queued_for_the_inference_worker(team, settings):
    first, second = _finished_run(team, settings), _finished_run(team, settings)
    queue = settings.infer_queue
    waiting = get_redis().llen(queue)
    response = _post(team, {"run_ids": [first["id"], second["id"]], "prompt": "What is 2 plus 3?",
                            "sampling": {"max_new_tokens": 5, "do_sample": True, "seed": 3}})
    assert response.status_code == 202, response.text
    body = response.json()
    assert [(s["slot"], s["kind"], s["run_id"]) for s in body["slots"]] == [
        (0, "base", None), (1, "run", first["id"]), (2, "run", second["id"])]
    assert all(s["chat_template"] for s in body["slots"]), "instruction runs answer through the chat template"
    assert body["events_url"] == f"/api/v1/playground/{body['id']}/events"
    assert get_redis().llen(queue) == waiting + 1, "one message on the infer queue"
    stored = json.loads(get_redis().get(f"{settings.redis_namespace}:playground:{body['id']}:request"))
    assert stored["sampling"]["seed"] == 3 and stored["slots"][1]["source"]["adapter_dir"].endswith("/adapter")

    without_base = _post(team, {"run_ids": [first["id"]], "prompt": "Hi", "include_base": False})
    assert [s["kind"] for s in without_base.json()["slots"]] == ["run"]


def test_a_dataset_row_is_the_prompt_and_its_answer_is_expected(team, settings):
    _, _, dataset = team
    run = _finished_run(team, settings)
    response = _post(team, {"run_ids": [run["id"]], "dataset_row": {"dataset_id": dataset["id"], "row": 2}})
    assert response.status_code == 202, response.text
    assert response.json()["prompt"] == [{"role": "user", "content": response.json()["prompt"][0]["content"]}]
    assert response.json()["prompt"][0]["content"].endswith("\n\n2") and response.json()["expected"] == "2"
    past_end = _error(_post(team, {"run_ids": [run["id"]], "dataset_row": {"dataset_id": dataset["id"], "row": 4}}),
                      422)
    assert past_end["details"][0]["field"] == "dataset_row.row"


def test_a_feedback_row_expects_its_completion_only_when_it_was_rated_desirable(team, settings):
    built, http, _ = team
    rows = [{"prompt": f"Say yes {uuid.uuid4().hex}.", "completion": "yes", "label": True},
            {"prompt": "Say no.", "completion": "maybe", "label": False}]
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    feedback = http.post(f"{API}/datasets", files={"file": ("ratings.jsonl", data, "application/jsonl")},
                         data={"project_id": str(built.project_id)}, headers=built.owner.headers).json()
    run = _finished_run(team, settings)

    answers = [_post(team, {"run_ids": [run["id"]], "dataset_row": {"dataset_id": feedback["id"], "row": row}}).json()
               for row in (0, 1)]

    assert [(a["prompt"][0]["content"], a["expected"]) for a in answers] == [(rows[0]["prompt"], "yes"),
                                                                             ("Say no.", "")]


@pytest.mark.parametrize(("body", "field"), [
    ({"prompt": "Hi"}, "run_ids"),
    ({"run_ids": [], "prompt": "Hi"}, "run_ids"),
    ({"run_ids": [1, 2, 3, 4, 5, 6, 7], "prompt": "Hi"}, "run_ids"),
    ({"run_ids": [1]}, ""),
    ({"run_ids": [1], "prompt": "Hi", "dataset_row": {"dataset_id": 1, "row": 0}}, ""),
    ({"run_ids": [1], "prompt": ""}, "prompt"),
    ({"run_ids": [1], "prompt": "Hi", "sampling": {"max_new_tokens": 0}}, "sampling.max_new_tokens"),
    ({"run_ids": [1], "prompt": "Hi", "sampling": {"max_new_tokens": 513}}, "sampling.max_new_tokens"),
    ({"run_ids": [1], "prompt": "Hi", "sampling": {"temperature": 0}}, "sampling.temperature"),
    ({"run_ids": [1], "prompt": "Hi", "sampling": {"top_p": 1.5}}, "sampling.top_p"),
    ({"run_ids": [1], "prompt": "Hi", "sampling": {"beams": 4}}, "sampling.beams"),
])
def test_bad_requests_are_422_naming_the_field(team, body, field):
    error = _error(_post(team, body), 422)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"][0]["field"] == field, error


def test_unfinished_runs_and_runs_without_weights_are_409_naming_the_run(team, settings):
    queued_run = _finished_run(team, settings, status="running")
    error = _error(_post(team, {"run_ids": [queued_run["id"]], "prompt": "Hi"}), 409)
    assert error["code"] == "RUN_NOT_SUCCEEDED" and error["details"]["run_id"] == queued_run["id"]
    assert f"run {queued_run['id']}" in error["message"]

    no_weights = _finished_run(team, settings, weights=False)
    error = _error(_post(team, {"run_ids": [no_weights["id"]], "prompt": "Hi"}), 409)
    assert error["code"] == "RUN_HAS_NO_WEIGHTS" and error["details"]["run_id"] == no_weights["id"]


def test_a_reward_model_scores_text_so_it_is_not_sent_to_generate_nor_continued_by_a_generating_run(team, settings):
    reward_run = _finished_run(team, settings, objective="reward")
    error = _error(_post(team, {"run_ids": [reward_run["id"]], "prompt": "Hi"}), 422)
    assert error["details"]["run_id"] == reward_run["id"] and "reward model" in error["message"]

    built, http, dataset = team
    body = {"method": "lora", "base_run": reward_run["id"], "dataset": dataset["id"], "project_id": built.project_id,
            "queue": IDLE_QUEUE}
    refused = http.post(f"{API}/runs", json=body, headers=built.editor.headers)
    assert refused.status_code == 422 and "cannot generate" in refused.json()["error"]["message"], refused.text
    assert refused.json()["error"]["details"][0]["field"] == "base_run"


def test_runs_of_different_base_models_are_422_naming_the_run_ids(team, settings, tmp_path):
    tiny = _finished_run(team, settings)
    other = _finished_run(team, settings, model_path=str(tmp_path / "another-base"))
    error = _error(_post(team, {"run_ids": [tiny["id"], other["id"]], "prompt": "Hi"}), 422)
    assert error["code"] == "BASE_MODELS_DIFFER"
    assert error["details"]["field"] == "run_ids" and error["details"]["run_ids"] == [tiny["id"], other["id"]]


def test_viewers_and_share_links_cannot_spend_compute_and_only_editors_read_the_stream(team, settings):
    built, http, _ = team
    run = _finished_run(team, settings)
    assert _error(_post(team, {"run_ids": [run["id"]], "prompt": "Hi"}, who="viewer"), 403)["code"] == "FORBIDDEN"
    link = create_share(http, built.owner, [run["id"]])["token"]
    shared = http.post(f"{API}/playground", json={"project_id": built.project_id, "run_ids": [run["id"]],
                                                  "prompt": "Hi"}, headers=share_header(link))
    assert _error(shared, 401)["code"] == "AUTH_REQUIRED"

    request_id = _post(team, {"run_ids": [run["id"]], "prompt": "Hi"}).json()["id"]
    events = f"{API}/playground/{request_id}/events"
    assert _error(http.get(events, headers=built.viewer.headers), 403)["code"] == "FORBIDDEN"
    assert _error(http.get(events, headers=share_header(link)), 401)["code"] == "AUTH_REQUIRED"
    gone = http.get(f"{API}/playground/{'0' * 24}/events", headers=built.editor.headers)
    assert _error(gone, 404)["code"] == "PLAYGROUND_NOT_FOUND"


def test_the_stream_replays_every_event_from_the_start_and_ends(team, settings):
    built, http, _ = team
    run = _finished_run(team, settings)
    request_id = _post(team, {"run_ids": [run["id"]], "prompt": "Hi", "include_base": False}).json()["id"]
    stream_key = f"{settings.redis_namespace}:playground:{request_id}"
    for event, data in (("token", {"slot": 0, "text": "He"}), ("token", {"slot": 0, "text": "llo"}),
                        ("done", {"slot": 0, "text": "Hello"}), ("end", {})):
        get_redis().xadd(stream_key, {"event": event, "data": json.dumps(data)})
    body = http.get(f"{API}/playground/{request_id}/events", headers=built.editor.headers).text
    events = [line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event: ")]
    assert events == ["token", "token", "done", "end"]
    first_id = next(line.removeprefix("id: ") for line in body.splitlines() if line.startswith("id: "))
    resumed = http.get(f"{API}/playground/{request_id}/events", headers={**built.editor.headers,
                                                                        "Last-Event-ID": first_id}).text
    assert [line for line in resumed.splitlines() if line.startswith("event: ")] == [
        "event: token", "event: done", "event: end"]


def test_a_runs_samples_are_a_table_share_links_read(team, settings):
    built, http, _ = team
    run = _finished_run(team, settings)
    samples = [{"prompt": "P1", "expected": "E1", "completion": "T1", "base_completion": "B1"},
               {"prompt": "P2", "expected": "E2", "completion": "T2"},
               # Generation ran out of its time budget before this one began.
               {"prompt": "P3", "expected": "E3", "completion": None, "base_completion": None,
                "time_budget_exceeded": True}]
    (settings.artifact_dir / str(run["id"]) / "samples.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in samples))
    link = create_share(http, built.owner, [run["id"]])["token"]
    response = http.get(f"{API}/runs/{run['id']}/samples", headers=share_header(link))
    assert response.status_code == 200, response.text
    assert response.json() == {"count": 3, "data": [
        {"prompt": "P1", "expected": "E1", "base": "B1", "tuned": "T1", "cut_short": False},
        {"prompt": "P2", "expected": "E2", "base": None, "tuned": "T2", "cut_short": False},
        {"prompt": "P3", "expected": "E3", "base": None, "tuned": None, "cut_short": True}]}
    none_yet = _finished_run(team, settings)
    assert http.get(f"{API}/runs/{none_yet['id']}/samples", headers=built.viewer.headers).json()["count"] == 0


def test_a_runs_predictions_are_paged_and_share_links_read_them(team, settings):
    built, http, _ = team
    run = _finished_run(team, settings)
    scores = {"exact_match": 0.0, "rouge_l": 0.5, "bleu": 12.0}
    rows = [{"prompt": f"P{i}", "expected": f"E{i}", "tuned": f"T{i}", "base": f"B{i}", "tuned_scores": scores,
             "base_scores": scores} for i in range(5)]
    # The time budget ran out before the last row was answered.
    rows.append({"prompt": "P5", "expected": "E5", "tuned": None, "base": None, "tuned_scores": None,
                 "base_scores": None})
    (settings.artifact_dir / str(run["id"]) / "predictions.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    link = create_share(http, built.owner, [run["id"]])["token"]
    page = http.get(f"{API}/runs/{run['id']}/predictions", params={"offset": 4, "limit": 10},
                    headers=share_header(link))
    assert page.status_code == 200, page.text
    assert page.json() == {"count": 6, "offset": 4, "data": [rows[4], rows[5]]}
    assert http.get(f"{API}/runs/{run['id']}/predictions", params={"limit": 0},
                    headers=built.viewer.headers).status_code == 422
    none_yet = _finished_run(team, settings)
    assert http.get(f"{API}/runs/{none_yet['id']}/predictions", headers=built.viewer.headers).json() == {
        "count": 0, "offset": 0, "data": []}


def test_a_reward_run_scores_each_completion_and_a_completion_of_your_own(team, settings):
    """The request names the reward run whose model scores every completion (the worker scores: see
    tests/worker/test_playground.py); a completion of your own is a slot that is only scored."""
    reward_run, generating = _finished_run(team, settings, objective="reward"), _finished_run(team, settings)
    response = _post(team, {"run_ids": [generating["id"]], "prompt": "2+2?", "reward_run": reward_run["id"],
                            "completion": "4"})
    assert response.status_code == 202, response.text
    body = response.json()
    assert [(s["kind"], s["run_id"]) for s in body["slots"]] == [("base", None), ("run", generating["id"]),
                                                                  ("given", None)]
    assert body["scored_by"] == f"run {reward_run['id']}: {reward_run['name']}"
    stored = json.loads(get_redis().get(f"{settings.redis_namespace}:playground:{body['id']}:request"))
    assert stored["slots"][2]["text"] == "4"
    # Named by run, not by a path of the API's host: the inference worker finds its own copy (playground.localized).
    assert stored["scorer"]["start_from"] == [["adapter", f"run:{reward_run['id']}/adapter"]]

    only_scored = _post(team, {"prompt": "2+2?", "reward_run": reward_run["id"], "completion": "4"})
    assert only_scored.status_code == 202 and [s["kind"] for s in only_scored.json()["slots"]] == ["given"]

    for body, field, said in (
            ({"prompt": "2+2?", "completion": "4"}, "completion", "give reward_run"),
            ({"prompt": "2+2?", "reward_run": generating["id"], "completion": "4"}, "reward_run", "not a reward model"),
            ({"run_ids": [generating["id"]], "prompt": "2+2?", "reward_run": 987654}, "reward_run", "does not exist")):
        refused = _post(team, body)
        assert refused.status_code in (404, 422), refused.text
        error = refused.json()["error"]
        assert error["message"].startswith(f"{field}: ") and said in error["message"], error
