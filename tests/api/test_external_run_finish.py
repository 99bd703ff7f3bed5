"""POST /runs/{id}/finish: an external run's script ends it as succeeded or failed, once; a run Tunelab trains, a
finished run, a viewer and bad input are refused in the one error shape, changing nothing."""

import pytest

from tests.api.teams_helpers import (
    API,
    Team,
    error_of,
    launch_external,
    launch_queued,
    team_fixture,
    upload_dataset,
)

team = team_fixture("finish")


def _finish(http, team: Team, run_id: int, body: dict, who=None):
    return http.post(f"{API}/runs/{run_id}/finish", json=body, headers=(who or team.editor).headers)


def test_an_external_run_finishes_succeeded_with_a_summary_from_its_points(http, team):
    run = launch_external(http, team.editor, team.project_id)
    points = [{"key": "eval/loss", "step": 10, "value": 1.5}, {"key": "eval/loss", "step": 20, "value": 1.2},
              {"key": "eval/loss", "step": 30, "value": 1.4}, {"key": "train/tokens_seen", "step": 30, "value": 9000}]
    assert http.post(f"{API}/runs/{run['id']}/metrics", json={"points": points},
                     headers=team.editor.headers).status_code == 200

    finished = _finish(http, team, run["id"], {"status": "succeeded"})

    assert finished.status_code == 200, finished.text
    body = finished.json()
    assert body["status"] == "succeeded" and body["finished_at"] is not None and body["status_reason"] is None
    assert body["final_eval_loss"] == 1.4 and body["best_eval_loss"] == 1.2
    assert body["wall_time_s"] > 0 and body["tokens_per_second"] == pytest.approx(9000 / body["wall_time_s"])
    assert http.get(f"{API}/runs/{run['id']}", headers=team.viewer.headers).json()["status"] == "succeeded"


def test_a_failed_finish_keeps_the_reason_and_a_second_finish_is_refused(http, team):
    run = launch_external(http, team.editor, team.project_id)

    failed = _finish(http, team, run["id"], {"status": "failed", "reason": "RuntimeError: CUDA out of memory"})
    again = _finish(http, team, run["id"], {"status": "succeeded"})

    assert failed.status_code == 200 and failed.json()["status"] == "failed"
    assert failed.json()["status_reason"] == "RuntimeError: CUDA out of memory"
    assert error_of(again, 409, "RUN_FINISHED")["details"] == {"status": "failed"}
    assert http.get(f"{API}/runs/{run['id']}", headers=team.editor.headers).json()["status"] == "failed"


def test_a_canceled_run_cannot_be_finished(http, team):
    run = launch_external(http, team.editor, team.project_id)
    assert http.post(f"{API}/runs/{run['id']}/cancel", headers=team.editor.headers).status_code == 200

    error_of(_finish(http, team, run["id"], {"status": "succeeded"}), 409, "RUN_FINISHED")


def test_a_run_tunelab_trains_is_refused(http, team):
    dataset = upload_dataset(http, team.editor, team.project_id)
    queued = launch_queued(http, team.editor, team.project_id, dataset["id"])

    error_of(_finish(http, team, queued["id"], {"status": "succeeded"}), 409, "RUN_NOT_EXTERNAL")
    assert http.get(f"{API}/runs/{queued['id']}", headers=team.editor.headers).json()["status"] == "queued"


def test_a_viewer_cannot_finish_and_bad_input_names_the_field(http, team):
    run = launch_external(http, team.editor, team.project_id)

    error_of(_finish(http, team, run["id"], {"status": "succeeded"}, who=team.viewer), 403, "FORBIDDEN")
    bad = error_of(_finish(http, team, run["id"], {"status": "canceled"}), 422, "VALIDATION_ERROR")
    assert "status" in str(bad["details"])
    error_of(_finish(http, team, run["id"], {"status": "failed", "reason": "x" * 2001}), 422, "VALIDATION_ERROR")
    assert http.get(f"{API}/runs/{run['id']}", headers=team.editor.headers).json()["status"] == "running"


def test_an_external_runs_progress_is_its_newest_logged_step(http, team):
    """`tunelab runs list` showed `0` steps for an external run that had logged 30: no worker reports its progress."""
    run = launch_external(http, team.editor, team.project_id)
    assert run["progress"]["current_step"] == 0
    points = [{"key": "train/loss", "step": step, "value": 1 / step} for step in (1, 2, 3)]
    points.append({"key": "eval/loss", "step": 30, "value": 0.5})
    assert http.post(f"{API}/runs/{run['id']}/metrics", json={"points": points},
                     headers=team.editor.headers).status_code == 200

    one = http.get(f"{API}/runs/{run['id']}", headers=team.viewer.headers).json()
    listed = http.get(f"{API}/runs", params={"ids": [run["id"]]}, headers=team.viewer.headers).json()["data"]

    assert one["progress"]["current_step"] == 30
    assert [r["progress"]["current_step"] for r in listed] == [30]
