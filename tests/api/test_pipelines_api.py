"""Pipelines through the API: every stage checked before anything is created (the stages it depends on as they will
be), only the first stage queued at launch, the next one launched when its parent succeeds (by whoever comes first:
the worker's settle, the reaper's sweep), the rest canceled with the reason when a stage fails or is canceled, and a
pipeline's share link. The worker test (tests/worker/test_pipeline_stages.py) trains a whole pipeline."""

import uuid

import pytest
from sqlalchemy import func, select

from tests.api.teams_helpers import API, IDLE_QUEUE, error_of, share_header, team_fixture, write_run_outputs
from tests.conftest import find_bundled_dataset
from tunelab.db.models import Pipeline, Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.services.runs import lifecycle, pipelines

team = team_fixture("pipelines")


@pytest.fixture(scope="module")
def datasets(admin) -> dict[str, int]:
    def get(params):
        return admin.get(f"{API}/datasets", params=params).json()

    return {name: find_bundled_dataset(get, name)["id"] for name in ("tiny-tasks", "tiny-preferences", "tiny-notes")}


def rlhf_body(team, datasets, **changes) -> dict:
    """SFT → reward model (from the SFT weights) → GRPO (from SFT, rewarded by stage 2), on a queue no worker takes."""
    stages = [
        {"name": "SFT", "objective": "sft", "method": "lora", "dataset_id": datasets["tiny-tasks"],
         "params": {"max_steps": 2}},
        {"name": "Reward model", "objective": "reward", "method": "lora", "dataset_id": datasets["tiny-preferences"],
         "params": {"max_steps": 2, "max_length": 64}, "start_from": 1},
        {"name": "GRPO", "objective": "grpo", "method": "lora", "dataset_id": datasets["tiny-tasks"],
         "params": {"max_steps": 2, "reward_exact_match": 0, "per_device_train_batch_size": 4},
         "start_from": 1, "reward_from": 2},
    ]
    body = {"project_id": team.project_id, "name": f"rlhf-{uuid.uuid4().hex[:6]}", "model": "tunelab-tiny",
            "template": "rlhf", "queue": IDLE_QUEUE, "stages": stages}
    return {**body, **changes}


def with_stage(body: dict, index: int, **changes) -> dict:
    stages = [dict(stage) for stage in body["stages"]]
    stages[index] = {**stages[index], **changes}
    return {**body, "stages": stages}


def launch(http, team, body) -> dict:
    response = http.post(f"{API}/pipelines", json=body, headers=team.editor.headers)
    assert response.status_code == 201, response.text
    return response.json()


def _counts(db_session) -> tuple[int, int]:
    db_session.rollback()
    return db_session.scalar(select(func.count(Run.id))), db_session.scalar(select(func.count(Pipeline.id)))


def _succeed(settings, run_id: int) -> None:
    """The run trained (claimed and finished as the worker does) and left an adapter to start from."""
    with session_scope() as session:
        assert lifecycle.claim_run(session, run_id, "test-worker") is not None
        assert lifecycle.finish_run(session, run_id, RunStatus.succeeded)
    write_run_outputs(settings, run_id)


def _fail(run_id: int, reason: str) -> None:
    with session_scope() as session:
        assert lifecycle.claim_run(session, run_id, "test-worker") is not None
        assert lifecycle.finish_run(session, run_id, RunStatus.failed, reason)


def _settle(settings, run_id: int) -> int | None:
    """What the worker's supervisor does once a run's training process has ended."""
    with session_scope() as session:
        launched = pipelines.advance_after_run(session, settings, run_id, None)
        return launched.id if launched is not None else None


def test_templates_name_registered_objectives_and_each_launches_as_it_is(http, team, datasets, db_session):
    templates = http.get(f"{API}/pipeline-templates", headers=team.editor.headers).json()["data"]
    assert [t["name"] for t in templates] == ["rlhf", "sft-dpo", "pretrain-sft"]
    rlhf = templates[0]
    assert [(s["objective"], s["start_from"], s["reward_from"]) for s in rlhf["stages"]] == [
        ("sft", None, None), ("reward", 1, None), ("grpo", 1, 2)]
    assert rlhf["stages"][1]["dataset_formats"] == ["preference"]
    for template in templates:
        stages = [{"name": s["name"], "objective": s["objective"], "method": s["method"],
                   "dataset_id": datasets[s["suggested_dataset"]], "params": s["params"],
                   "start_from": s["start_from"], "reward_from": s["reward_from"]} for s in template["stages"]]
        body = {"project_id": team.project_id, "name": template["name"], "model": "tunelab-tiny",
                "template": template["name"], "queue": IDLE_QUEUE, "stages": stages}
        launched = launch(http, team, body)
        assert [s["status"] for s in launched["stages"]] == ["queued"] + ["waiting"] * (len(stages) - 1), template
        http.post(f"{API}/pipelines/{launched['id']}/cancel", headers=team.editor.headers)


def test_launch_queues_the_first_stage_only(http, team, datasets):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    assert pipeline["status"] == "queued" and pipeline["current_stage"] == 0
    first, second, third = pipeline["stages"]
    assert first["status"] == "queued" and first["run"]["name"] == f"{pipeline['name']} · SFT"
    assert first["run"]["config"]["objective"] == "sft"
    assert (second["status"], second["run"], second["start_from"]) == ("waiting", None, 1)
    assert (third["status"], third["run"], third["start_from"], third["reward_from"]) == ("waiting", None, 1, 2)
    assert pipeline["final_run_id"] is None
    listed = http.get(f"{API}/pipelines", params={"project_id": team.project_id}, headers=team.viewer.headers).json()
    assert pipeline["id"] in [p["id"] for p in listed["data"]]


@pytest.mark.parametrize(("change", "code", "field", "said"), [
    (lambda b, d: with_stage(b, 1, params={"max_length": 10**6}), "VALIDATION_ERROR", "stages.1.params.max_length",
     "stage 2 (Reward model)"),
    (lambda b, d: with_stage(b, 2, start_from=2), "VALIDATION_ERROR", "stages.2.start_from", "cannot generate"),
    (lambda b, d: with_stage(b, 2, reward_from=1), "VALIDATION_ERROR", "stages.2.reward_from", "not a reward model"),
    (lambda b, d: with_stage(b, 1, reward_from=1), "VALIDATION_ERROR", "stages.1.reward_from",
     "not rewarded by a model"),
    (lambda b, d: with_stage(b, 0, start_from=2), "VALIDATION_ERROR", "stages.0.start_from", "earlier stage"),
    (lambda b, d: with_stage(b, 2, reward_from=3), "VALIDATION_ERROR", "stages.2.reward_from", "earlier stage"),
    (lambda b, d: with_stage(b, 1, dataset_id=d["tiny-tasks"]), "VALIDATION_ERROR", "stages.1.dataset_id", "preference"),
    (lambda b, d: with_stage(b, 2, method="telepathy"), "METHOD_NOT_FOUND", "stages.2.method", "telepathy"),
    (lambda b, d: with_stage(b, 2, params={"reward_exact_match": 0, "reward_model_run": 5}), "VALIDATION_ERROR",
     "stages.2.params.reward_model_run", "not both"),
    (lambda b, d: {**b, "model": None}, "VALIDATION_ERROR", "model", "base model"),
    (lambda b, d: {**b, "model": "no-such-model"}, "MODEL_NOT_FOUND", "model", "no-such-model"),
])
def test_a_bad_stage_refuses_the_whole_pipeline_naming_it_and_creates_nothing(http, team, datasets, db_session,
                                                                            change, code, field, said):
    body = change(rlhf_body(team, datasets), datasets)
    before = _counts(db_session)
    response = http.post(f"{API}/pipelines", json=body, headers=team.editor.headers)
    error = error_of(response, 422, code)
    assert error["message"].startswith(field), error
    assert said in error["message"], error
    assert _counts(db_session) == before


def test_each_stage_is_launched_when_its_parent_succeeds_from_the_right_weights(http, team, datasets, settings):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    pipeline_id, sft = pipeline["id"], pipeline["stages"][0]["run"]["id"]
    link = http.post(f"{API}/pipelines/{pipeline_id}/shares", headers=team.owner.headers).json()
    assert (link["kind"], link["pipeline_id"], link["run_ids"]) == ("pipeline", pipeline_id, [sft])

    _succeed(settings, sft)
    reward = _settle(settings, sft)
    assert reward is not None and _settle(settings, sft) is None, "a stage is launched once, whoever comes second"
    page = http.get(f"{API}/pipelines/{pipeline_id}", headers=team.viewer.headers).json()
    assert [s["status"] for s in page["stages"]] == ["succeeded", "queued", "waiting"]
    assert (page["status"], page["current_stage"]) == ("running", 1)
    assert page["stages"][1]["run"]["base_run_id"] == sft

    _succeed(settings, reward)
    # The worker died before moving the pipeline on: the reaper's sweep launches the next stage.
    with session_scope() as session:
        swept = [run.id for run in pipelines.advance_all(session, settings, None)]
    page = http.get(f"{API}/pipelines/{pipeline_id}", headers=team.viewer.headers).json()
    grpo = page["stages"][2]["run"]
    # The app's own reaper may sweep first (it runs every second in tests): then this sweep finds nothing to launch.
    assert grpo is not None and swept in ([grpo["id"]], [])
    assert grpo["base_run_id"] == sft, "GRPO's policy starts from the SFT weights, not the reward model's"
    assert grpo["config"]["reward_model"]["run_id"] == reward
    assert grpo["config"]["params"]["reward_model_run"] == reward
    assert page["final_run_id"] == grpo["id"]

    # The link made before stages 2 and 3 were launched shows their runs too.
    shared = share_header(link["token"])
    assert http.get(f"{API}/pipelines/{pipeline_id}", headers=shared).status_code == 200
    assert http.get(f"{API}/runs/{grpo['id']}", headers=shared).status_code == 200
    assert http.post(f"{API}/pipelines/{pipeline_id}/cancel", headers=shared).status_code == 403

    _succeed(settings, grpo["id"])
    assert _settle(settings, grpo["id"]) is None
    page = http.get(f"{API}/pipelines/{pipeline_id}", headers=team.viewer.headers).json()
    assert (page["status"], page["current_stage"]) == ("succeeded", None)
    error_of(http.post(f"{API}/pipelines/{pipeline_id}/cancel", headers=team.editor.headers), 409,
             "PIPELINE_FINISHED")


def test_a_failed_stage_cancels_the_rest_with_the_reason(http, team, datasets, settings):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    sft = pipeline["stages"][0]["run"]["id"]
    _fail(sft, "RuntimeError: out of memory")
    assert _settle(settings, sft) is None
    page = http.get(f"{API}/pipelines/{pipeline['id']}", headers=team.viewer.headers).json()
    assert page["status"] == "failed"
    assert [s["status"] for s in page["stages"]] == ["failed", "canceled", "canceled"]
    assert page["stages"][0]["reason"] == "RuntimeError: out of memory"
    assert page["stages"][2]["reason"] == "stage 1 (SFT) failed: RuntimeError: out of memory"


def test_canceling_a_queued_stage_run_cancels_the_rest_at_once(http, team, datasets):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    sft = pipeline["stages"][0]["run"]["id"]
    assert http.post(f"{API}/runs/{sft}/cancel", headers=team.editor.headers).status_code == 200
    page = http.get(f"{API}/pipelines/{pipeline['id']}", headers=team.viewer.headers).json()
    assert page["status"] == "canceled"
    assert [s["status"] for s in page["stages"]] == ["canceled"] * 3
    assert page["stages"][1]["reason"] == "stage 1 (SFT) canceled: canceled before it started"


def test_cancel_and_delete_a_pipeline(http, team, datasets, db_session):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    error_of(http.post(f"{API}/pipelines/{pipeline['id']}/cancel", headers=team.viewer.headers), 403, "FORBIDDEN")
    canceled = http.post(f"{API}/pipelines/{pipeline['id']}/cancel", headers=team.editor.headers)
    assert canceled.status_code == 200, canceled.text
    stages = canceled.json()["stages"]
    assert [s["status"] for s in stages] == ["canceled"] * 3
    assert stages[1]["reason"] == f"pipeline canceled by {team.editor.email}"

    clone = http.post(f"{API}/pipelines/{pipeline['id']}/clone", headers=team.editor.headers)
    assert clone.status_code == 201, clone.text
    assert clone.json()["spec"]["stages"] == canceled.json()["spec"]["stages"]
    assert clone.json()["stages"][0]["status"] == "queued"

    sft = pipeline["stages"][0]["run"]["id"]
    assert http.delete(f"{API}/pipelines/{pipeline['id']}", headers=team.editor.headers).status_code == 204
    error_of(http.get(f"{API}/pipelines/{pipeline['id']}", headers=team.viewer.headers), 404, "PIPELINE_NOT_FOUND")
    assert http.get(f"{API}/runs/{sft}", headers=team.viewer.headers).status_code == 200, "its runs are kept"


def test_a_stage_whose_start_was_deleted_is_not_launched_and_says_why(http, team, datasets, settings):
    pipeline = launch(http, team, rlhf_body(team, datasets))
    sft = pipeline["stages"][0]["run"]["id"]
    _succeed(settings, sft)
    assert http.delete(f"{API}/runs/{sft}", headers=team.editor.headers).status_code == 204
    with session_scope() as session:
        assert pipelines.advance_all(session, settings, None) == []
    page = http.get(f"{API}/pipelines/{pipeline['id']}", headers=team.viewer.headers).json()
    assert [s["status"] for s in page["stages"]] == ["deleted", "canceled", "canceled"]
    assert page["stages"][1]["reason"] == "stage 1 (SFT)'s run was deleted"
