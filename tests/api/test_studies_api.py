"""Studies through the API: every run checked before any is queued, a matched budget, extend, clone, delete, who
may do what, and a study's share link (read-only, its runs only)."""

import uuid

import pytest
from sqlalchemy import func, select

from tests.api.teams_helpers import (
    API,
    IDLE_QUEUE,
    create_member,
    create_project,
    create_team,
    error_of,
    share_header,
    team_fixture,
)
from tests.conftest import find_bundled_dataset
from tunelab.db.models import Run, Study

team = team_fixture("studies")


@pytest.fixture(scope="module")
def sample_id(admin) -> int:
    return find_bundled_dataset(lambda params: admin.get(f"{API}/datasets", params=params).json())["id"]


@pytest.fixture
def idle_queue() -> str:
    """A declared queue no worker consumes: its runs stay queued."""
    return IDLE_QUEUE


def study_body(team, sample_id, idle, **changes) -> dict:
    body = {"project_id": team.project_id, "name": f"study-{uuid.uuid4().hex[:6]}", "model": "tunelab-tiny",
            "dataset_id": sample_id, "methods": ["lora", "ia3"], "seeds": [1, 2], "budget": {"max_steps": 4},
            "params": {"max_length": 64, "per_device_train_batch_size": 2, "eval_split": 0.2}, "queue": idle}
    return {**body, **changes}


def launch_study(http, team, sample_id, queue, **changes) -> dict:
    response = http.post(f"{API}/studies", json=study_body(team, sample_id, queue, **changes),
                         headers=team.editor.headers)
    assert response.status_code == 201, response.text
    return response.json()


def _counts(db_session) -> tuple[int, int]:
    db_session.rollback()
    return db_session.scalar(select(func.count(Run.id))), db_session.scalar(select(func.count(Study.id)))


@pytest.mark.parametrize(("change", "code", "field", "names"), [
    ({"grid": {"learning_rate": [1e-3, 5.0]}}, "VALIDATION_ERROR", "grid.learning_rate", "learning_rate=5.0"),
    ({"methods": ["lora", "telepathy"]}, "METHOD_NOT_FOUND", "methods", "telepathy"),
    ({"methods": ["lora", "qlora"], "queue": "cpu"}, "VALIDATION_ERROR", "methods", "qlora"),
    ({"params": {"max_length": 4096}}, "VALIDATION_ERROR", "params.max_length", "lora"),
    ({"params": {"max_steps": 9}}, "VALIDATION_ERROR", "params.max_steps", "budget"),
    ({"grid": {"eval_split": [0.1, 0.2]}}, "VALIDATION_ERROR", "grid.eval_split", "same for every run"),
    ({"grid": {"per_device_train_batch_size": [2, 4]}, "params": {}}, "VALIDATION_ERROR",
     "grid.per_device_train_batch_size", "train_tokens"),
    ({"grid": {"no_such_knob": [1, 2]}}, "VALIDATION_ERROR", "grid.no_such_knob", "no method"),
    ({"dataset_id": 987654}, "DATASET_NOT_FOUND", "dataset_id", "dataset"),
    ({"methods": ["lora", "dora"], "grid": {"learning_rate": [1e-4, 2e-4, 3e-4, 4e-4, 5e-4]},
      "seeds": [1, 2, 3, 4, 5]}, "VALIDATION_ERROR", "methods", "50 runs"),
])
def test_a_bad_combination_refuses_the_whole_study_and_creates_nothing(http, team, sample_id, idle_queue, db_session,
                                                                       change, code, field, names):
    before = _counts(db_session)
    response = http.post(f"{API}/studies", json=study_body(team, sample_id, idle_queue, **change),
                         headers=team.editor.headers)
    error = error_of(response, 422 if code != "DATASET_NOT_FOUND" else 404, code)
    assert error["message"].startswith(field), error
    assert names in error["message"], error
    assert _counts(db_session) == before


def test_a_token_budget_gives_every_run_the_same_tokens_eval_split_and_seeds(http, team, sample_id, idle_queue):
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora", "full"], seeds=[3, 4],
                         budget={"train_tokens": 2048}, grid={"per_device_train_batch_size": [2, 4]},
                         params={"max_length": 64, "eval_split": 0.2})
    runs = study["runs"]
    assert len(runs) == 2 * 2 * 2 and study["study"]["run_count"] == 8
    assert {run["study_id"] for run in runs} == {study["study"]["id"]}
    steps = {}
    for run in runs:
        params = run["config"]["params"]
        assert run["status"] == "queued" and run["queue"] == idle_queue
        assert params["max_length"] == 64 and params["eval_split"] == 0.2
        assert run["config"]["dataset"]["id"] == sample_id
        steps[params["per_device_train_batch_size"]] = params["max_steps"]
        assert params["max_steps"] * params["per_device_train_batch_size"] * 64 == 2048
    assert steps == {2: 16, 4: 8}
    assert {run["config"]["dataset"]["split_seed"] for run in runs} == {runs[0]["config"]["dataset"]["split_seed"]}
    for method in ("lora", "full"):
        assert sorted(r["seed"] for r in runs if r["method"] == method) == [3, 3, 4, 4]
    # A grid param a method lacks does not multiply that method's runs.
    ranked = launch_study(http, team, sample_id, idle_queue, methods=["lora", "full"], seeds=[1],
                          grid={"r": [4, 8]})
    assert sorted((r["method"], r["config"]["params"].get("r")) for r in ranked["runs"]) == [
        ("full", None), ("lora", 4), ("lora", 8)]
    assert {r["config"]["params"]["max_steps"] for r in ranked["runs"]} == {4}


def test_extend_adds_only_new_combinations_with_the_same_budget_and_clone_repeats_the_spec(http, team, sample_id,
                                                                                         idle_queue, db_session):
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1],
                         grid={"learning_rate": [1e-3]})
    study_id = study["study"]["id"]
    extended = http.post(f"{API}/studies/{study_id}/runs", json={"seeds": [2], "grid": {"learning_rate": [2e-3]}},
                         headers=team.editor.headers)
    assert extended.status_code == 201, extended.text
    runs = extended.json()["runs"]
    assert sorted((r["config"]["params"]["learning_rate"], r["seed"]) for r in runs) == [
        (1e-3, 1), (1e-3, 2), (2e-3, 1), (2e-3, 2)]
    assert {r["config"]["params"]["max_steps"] for r in runs} == {4}
    assert extended.json()["study"]["spec"]["seeds"] == [1, 2]
    before = _counts(db_session)
    error_of(http.post(f"{API}/studies/{study_id}/runs", json={"seeds": [1]}, headers=team.editor.headers), 422,
             "VALIDATION_ERROR")
    error_of(http.post(f"{API}/studies/{study_id}/runs", json={"grid": {"r": [4]}}, headers=team.editor.headers),
             422, "VALIDATION_ERROR")
    error_of(http.post(f"{API}/studies/{study_id}/runs", json={"methods": ["telepathy"]},
                       headers=team.editor.headers), 422, "METHOD_NOT_FOUND")
    assert _counts(db_session) == before

    clone = http.post(f"{API}/studies/{study_id}/clone", json={"name": "the clone"}, headers=team.editor.headers)
    assert clone.status_code == 201, clone.text
    cloned = clone.json()
    assert cloned["study"]["id"] != study_id and cloned["study"]["name"] == "the clone"
    assert cloned["study"]["spec"] == extended.json()["study"]["spec"]
    assert {r["id"] for r in cloned["runs"]}.isdisjoint({r["id"] for r in runs}) and len(cloned["runs"]) == 4

    listed = http.get(f"{API}/studies", params={"project_id": team.project_id, "limit": 1},
                      headers=team.viewer.headers).json()
    assert [s["id"] for s in listed["data"]] == [cloned["study"]["id"]] and listed["next_cursor"]
    second = http.get(f"{API}/studies", params={"project_id": team.project_id, "limit": 1,
                                                "cursor": listed["next_cursor"]}, headers=team.viewer.headers).json()
    assert [s["id"] for s in second["data"]] == [study_id]

    assert http.delete(f"{API}/studies/{study_id}", headers=team.editor.headers).status_code == 204
    error_of(http.get(f"{API}/studies/{study_id}", headers=team.editor.headers), 404, "STUDY_NOT_FOUND")
    for run in runs:  # the runs are kept, out of any study
        kept = http.get(f"{API}/runs/{run['id']}", headers=team.editor.headers)
        assert kept.status_code == 200 and kept.json()["study_id"] is None


def test_a_study_deleted_with_its_runs_takes_them_once_none_is_active(http, team, sample_id, idle_queue):
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1, 2])
    study_id, run_ids = study["study"]["id"], [run["id"] for run in study["runs"]]
    refused = error_of(http.delete(f"{API}/studies/{study_id}", params={"with_runs": "true"},
                                   headers=team.editor.headers), 409, "RUN_NOT_FINISHED")
    assert "cancel them first, or keep the runs" in refused["message"]
    assert http.get(f"{API}/studies/{study_id}", headers=team.editor.headers).status_code == 200, "nothing changed"
    for run_id in run_ids:
        assert http.post(f"{API}/runs/{run_id}/cancel", headers=team.editor.headers).status_code == 200
    assert http.delete(f"{API}/studies/{study_id}", params={"with_runs": "true"},
                       headers=team.editor.headers).status_code == 204
    error_of(http.get(f"{API}/studies/{study_id}", headers=team.editor.headers), 404, "STUDY_NOT_FOUND")
    for run_id in run_ids:
        error_of(http.get(f"{API}/runs/{run_id}", headers=team.editor.headers), 404, "RUN_NOT_FOUND")


def test_viewers_read_editors_change_outsiders_see_nothing(app, admin, http, team, sample_id, idle_queue):
    study_id = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1])["study"]["id"]
    assert http.get(f"{API}/studies/{study_id}", headers=team.viewer.headers).status_code == 200
    error_of(http.post(f"{API}/studies", json=study_body(team, sample_id, idle_queue), headers=team.viewer.headers),
             403, "FORBIDDEN")
    for path in (f"/studies/{study_id}/runs", f"/studies/{study_id}/clone", f"/studies/{study_id}/shares"):
        error_of(http.post(API + path, json={} if path.endswith("runs") else None, headers=team.viewer.headers),
                 403, "FORBIDDEN")
    error_of(http.delete(f"{API}/studies/{study_id}", headers=team.viewer.headers), 403, "FORBIDDEN")
    outsider = create_member(app, admin, "studies-outsider")
    create_project(http, outsider, "studies-other")
    error_of(http.get(f"{API}/studies/{study_id}", headers=outsider.headers), 404, "STUDY_NOT_FOUND")
    error_of(http.delete(f"{API}/studies/{study_id}", headers=outsider.headers), 404, "STUDY_NOT_FOUND")
    assert study_id not in [s["id"] for s in http.get(f"{API}/studies", headers=outsider.headers).json()["data"]]
    error_of(http.get(f"{API}/studies", params={"project_id": team.project_id}, headers=outsider.headers), 404,
             "PROJECT_NOT_FOUND")


def test_a_study_link_opens_the_study_read_only_and_only_its_runs(http, team, sample_id, idle_queue):
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora", "ia3"], seeds=[1])
    other = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1])
    study_id, run_ids = study["study"]["id"], sorted(r["id"] for r in study["runs"])
    created = http.post(f"{API}/studies/{study_id}/shares", json={}, headers=team.editor.headers)
    assert created.status_code == 201, created.text
    link = created.json()
    assert link["kind"] == "study" and link["study_id"] == study_id and sorted(link["run_ids"]) == run_ids
    opened = http.get(f"{API}/shared/{link['token']}").json()
    assert opened["kind"] == "study" and opened["study_id"] == study_id and opened["title"] == study["study"]["name"]
    shared = share_header(link["token"])
    seen = http.get(f"{API}/studies/{study_id}", headers=shared)
    assert seen.status_code == 200 and sorted(r["id"] for r in seen.json()["runs"]) == run_ids
    assert seen.json()["cost_table"]["rows"]
    listed = http.get(f"{API}/runs", headers=shared).json()
    assert sorted(r["id"] for r in listed["data"]) == run_ids
    error_of(http.get(f"{API}/studies/{other['study']['id']}", headers=shared), 404, "STUDY_NOT_FOUND")
    error_of(http.get(f"{API}/runs/{other['runs'][0]['id']}", headers=shared), 404, "RUN_NOT_FOUND")
    error_of(http.post(f"{API}/studies/{study_id}/runs", json={"seeds": [2]}, headers=shared), 403, "FORBIDDEN")
    error_of(http.delete(f"{API}/studies/{study_id}", headers=shared), 403, "FORBIDDEN")
    error_of(http.get(f"{API}/studies", headers=shared), 401)
    # An extension shows on the link; deleting the study revokes it.
    extended = http.post(f"{API}/studies/{study_id}/runs", json={"seeds": [2]}, headers=team.editor.headers).json()
    assert len(http.get(f"{API}/runs", headers=shared).json()["data"]) == len(extended["runs"]) == 4
    assert http.delete(f"{API}/studies/{study_id}", headers=team.editor.headers).status_code == 204
    error_of(http.get(f"{API}/shared/{link['token']}"), 410, "SHARE_REVOKED")


def test_the_cost_table_of_a_comparison_groups_by_method_and_the_params_that_differ(http, team, sample_id,
                                                                                    idle_queue):
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1, 2],
                         grid={"r": [4, 8]})
    run_ids = [r["id"] for r in study["runs"]]
    table = http.post(f"{API}/cost-table", json={"run_ids": run_ids}, headers=team.viewer.headers)
    assert table.status_code == 200, table.text
    cells = {row["cell"]: sorted(row["run_ids"]) for row in table.json()["rows"]}
    assert set(cells) == {"lora · r=4", "lora · r=8"} and all(len(ids) == 2 for ids in cells.values())
    assert study["cost_table"]["rows"][0]["cell"].startswith("lora · r=")


def test_the_cost_table_does_not_rank_eval_losses_across_base_models_and_says_why(http, team):
    run_ids = []
    for model, losses in (("tunelab-tiny", [2.0, 1.0]), ("another-base", [2.0, 1.5])):
        created = http.post(f"{API}/runs", json={"method": "lora", "model": model, "external": True,
                                                 "project_id": team.project_id}, headers=team.editor.headers)
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        points = [{"key": "eval/loss", "step": 10 * (i + 1), "value": v} for i, v in enumerate(losses)]
        assert http.post(f"{API}/runs/{run_id}/metrics", json={"points": points},
                         headers=team.editor.headers).status_code == 200
        # Only finished runs are compared.
        assert http.post(f"{API}/runs/{run_id}/finish", json={"status": "succeeded"},
                         headers=team.editor.headers).status_code == 200
        run_ids.append(run_id)
    table = http.post(f"{API}/cost-table", json={"run_ids": run_ids}, headers=team.viewer.headers).json()
    columns = {column["key"]: column for column in table["columns"]}
    assert not columns["best_eval_loss"]["ranked"] and not columns["tokens_to_target"]["ranked"]
    assert "different base models and tokenizers: another-base, tunelab-tiny" in \
        columns["best_eval_loss"]["not_ranked_reason"]
    assert table["notes"][0].startswith("not ranked:")
    assert all("best_eval_loss" not in row["best"] for row in table["rows"])
    assert sorted(row["values"]["best_eval_loss"]["mean"] for row in table["rows"]) == [1.0, 1.5]
    same = http.post(f"{API}/cost-table", json={"run_ids": run_ids[:1]}, headers=team.viewer.headers).json()
    assert all(column["ranked"] for column in same["columns"])


def test_a_project_with_a_study_can_be_deleted(app, admin, http, sample_id, idle_queue):
    team = create_team(app, admin, http, "studies-doomed")
    study = launch_study(http, team, sample_id, idle_queue, methods=["lora"], seeds=[1, 2])
    link = http.post(f"{API}/studies/{study['study']['id']}/shares", headers=team.editor.headers).json()
    for run in study["runs"]:
        assert http.post(f"{API}/runs/{run['id']}/cancel", headers=team.editor.headers).status_code == 200
    deleted = http.delete(f"{API}/projects/{team.project_id}", headers=team.owner.headers)
    assert deleted.status_code == 204, deleted.text
    error_of(http.get(f"{API}/studies/{study['study']['id']}", headers=team.owner.headers), 404, "STUDY_NOT_FOUND")
    assert http.get(f"{API}/shared/{link['token']}").status_code in (404, 410)
