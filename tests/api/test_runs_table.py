"""The run table: tags, notes and rename; filters by tag, param and summary metric (on SQLite and PostgreSQL); bulk
actions applied to all runs or none; CSV/JSON exports of the table and of a run's full metric history."""

import csv
import io
import uuid

import pytest
from sqlalchemy import func, select

from tests.api.teams_helpers import (
    API,
    Team,
    cancel,
    create_share,
    create_team,
    error_of,
    launch_external,
    share_header,
    team_fixture,
    unique,
)
from tunelab.db.models import Run, RunTag
from tunelab.schemas.metrics import DEFAULT_MAX_POINTS
from tunelab.services.runs import run_filters, runs

team = team_fixture("table")


def _external(http, team: Team, params: dict, name: str | None = None) -> dict:
    body = {"method": "lora", "model": "tunelab-tiny", "external": True, "project_id": team.project_id,
            "name": name or unique("table"), "params": params}
    response = http.post(f"{API}/runs", json=body, headers=team.editor.headers)
    assert response.status_code == 201, response.text
    return response.json()


def _log(http, team: Team, run_id: int, points: list[tuple[str, int, float]]) -> None:
    body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
    response = http.post(f"{API}/runs/{run_id}/metrics", json=body, headers=team.editor.headers)
    assert response.status_code == 200, response.text


def _patch(http, team: Team, run_id: int, body: dict, who=None):
    return http.patch(f"{API}/runs/{run_id}", json=body, headers=(who or team.editor).headers)


def _ids(http, team: Team, **params) -> list[int]:
    response = http.get(f"{API}/runs", params={"project_id": team.project_id, "limit": 200, **params},
                        headers=team.viewer.headers)
    assert response.status_code == 200, response.text
    return sorted(r["id"] for r in response.json()["data"])


def test_an_editor_renames_notes_and_tags_a_run_and_a_viewer_cannot(http, team):
    run = launch_external(http, team.editor, team.project_id)
    assert (run["tags"], run["notes"]) == ([], None)

    response = _patch(http, team, run["id"], {"name": "renamed", "notes": "lr too high?", "tags": ["b", "a ", "b"]})

    assert response.status_code == 200, response.text
    assert (response.json()["name"], response.json()["notes"], response.json()["tags"]) == (
        "renamed", "lr too high?", ["a", "b"])
    kept = _patch(http, team, run["id"], {"tags": ["c"]}).json()
    assert (kept["name"], kept["notes"], kept["tags"]) == ("renamed", "lr too high?", ["c"])
    assert http.get(f"{API}/runs/{run['id']}", headers=team.viewer.headers).json()["tags"] == ["c"]
    error_of(_patch(http, team, run["id"], {"tags": ["x"]}, who=team.viewer), 403, "FORBIDDEN")
    assert http.get(f"{API}/runs/{run['id']}", headers=team.viewer.headers).json()["tags"] == ["c"]


@pytest.mark.parametrize(("body", "field"), [
    ({"tags": ["a,b"]}, "tags"),
    ({"tags": ["x" * 51]}, "tags"),
    ({"tags": [""]}, "tags"),
    ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
    ({"name": ""}, "name"),
    ({"name": "n" * 201}, "name"),
    ({"name": None}, "name"),
    ({"color": "red"}, "color"),
])
def test_a_bad_update_is_422_naming_the_field_and_changes_nothing(http, team, body, field):
    run = launch_external(http, team.editor, team.project_id)
    _patch(http, team, run["id"], {"tags": ["keep"]})

    error = error_of(_patch(http, team, run["id"], {"notes": "changed", **body}), 422)

    assert field in error["message"]
    after = http.get(f"{API}/runs/{run['id']}", headers=team.editor.headers).json()
    assert (after["tags"], after["notes"], after["name"]) == (["keep"], None, run["name"])


@pytest.fixture(scope="module")
def filter_world(http, team) -> dict[str, int]:
    """Three runs of the team's project: tagged, with params, and with summaries that tell them apart."""
    fast = _external(http, team, {"learning_rate": 0.001, "r": 16, "target": "attn", "packing": True})
    slow = _external(http, team, {"learning_rate": 0.00001, "r": 8, "target": "mlp", "packing": False})
    odd = _external(http, team, {"learning_rate": "auto", "r": "sixteen"})  # text where others have numbers
    _patch(http, team, fast["id"], {"tags": ["baseline", "lr-sweep"]})
    _patch(http, team, slow["id"], {"tags": ["lr-sweep"]})
    _log(http, team, fast["id"], [("eval/loss", 10, 1.5), ("eval/loss", 20, 2.5), ("train/loss", 20, 0.5)])
    _log(http, team, slow["id"], [("eval/loss", 10, 3.0), ("eval/loss", 20, 2.2), ("train/loss", 20, 2.0)])
    return {"fast": fast["id"], "slow": slow["id"], "odd": odd["id"]}


@pytest.mark.parametrize(("params", "expected"), [
    ({"tag": "lr-sweep"}, ["fast", "slow"]),
    ({"tag": ["lr-sweep", "baseline"]}, ["fast"]),
    ({"tag": "nobody"}, []),
    ({"param": "r:16"}, ["fast"]),
    ({"param": "r=8"}, ["slow"]),
    ({"param": "learning_rate>0.0001"}, ["fast"]),
    ({"param": "learning_rate<=0.00001"}, ["slow"]),
    ({"param": "learning_rate:auto"}, ["odd"]),
    ({"param": "target:mlp"}, ["slow"]),
    ({"param": "packing:true"}, ["fast"]),
    ({"param": ["r>1", "learning_rate<0.01"]}, ["fast", "slow"]),
    ({"metric": "eval/loss<2.3"}, ["slow"]),  # the latest eval loss: 2.5 and 2.2
    ({"metric": "min(eval/loss)<2"}, ["fast"]),
    ({"metric": "max(eval/loss)>=3"}, ["slow"]),
    ({"metric": "best_eval_loss<2"}, ["fast"]),
    ({"metric": "train/loss=0.5"}, ["fast"]),
    ({"metric": "eval/loss>0", "tag": "baseline", "param": "r:16"}, ["fast"]),
])
def test_filters_by_tag_param_and_summary_metric(http, team, filter_world, params, expected):
    assert _ids(http, team, **params) == sorted(filter_world[name] for name in expected)


def test_any_logged_metric_is_a_column_with_its_last_min_and_max(http, team, filter_world):
    keys = http.get(f"{API}/metric-keys", params={"project_id": team.project_id}, headers=team.viewer.headers)
    assert keys.status_code == 200, keys.text
    assert {"eval/loss", "train/loss"} <= set(keys.json()["data"])
    response = http.get(f"{API}/runs", params={"project_id": team.project_id, "ids": list(filter_world.values()),
                                               "metric_column": ["eval/loss", "no/such-key"]},
                        headers=team.viewer.headers)
    assert response.status_code == 200, response.text
    by_id = {r["id"]: r["metric_columns"] for r in response.json()["data"]}
    assert by_id[filter_world["fast"]] == {"eval/loss": {"last": 2.5, "last_step": 20, "min": 1.5, "max": 2.5}}
    assert by_id[filter_world["slow"]] == {"eval/loss": {"last": 2.2, "last_step": 20, "min": 2.2, "max": 3.0}}
    assert by_id[filter_world["odd"]] == {}  # nothing logged: no column value, not zeros
    # Without metric_column a run carries none; the same filters narrow the keys.
    plain = http.get(f"{API}/runs", params={"project_id": team.project_id}, headers=team.viewer.headers).json()
    assert all(r["metric_columns"] == {} for r in plain["data"])
    narrowed = http.get(f"{API}/metric-keys", params={"project_id": team.project_id, "ids": [filter_world["odd"]]},
                        headers=team.viewer.headers).json()
    assert narrowed["data"] == []


@pytest.mark.parametrize(("params", "parameter"), [
    ({"param": "lora_r"}, "param"),
    ({"param": "r>big"}, "param"),
    ({"param": "1r:3"}, "param"),
    ({"param": "r:"}, "param"),
    ({"metric": "eval/loss"}, "metric"),
    ({"metric": "eval/loss<low"}, "metric"),
    ({"metric": "avg(eval/loss)<2"}, "metric"),
    ({"metric": "eval/loss<nan"}, "metric"),
    ({"tag": "a,b"}, "tag"),
])
def test_bad_filter_syntax_is_422_naming_the_query_parameter(http, team, params, parameter):
    for path in ("/runs", "/runs/export"):
        response = http.get(f"{API}{path}", params=params, headers=team.viewer.headers)
        error = error_of(response, 422, "VALIDATION_ERROR")
        assert error["message"].startswith(f"{parameter}:")
        assert error["details"][0]["field"] == parameter


def test_bulk_tags_untags_and_cancels_all_runs(http, team):
    first, second = (launch_external(http, team.editor, team.project_id)["id"] for _ in range(2))
    bulk = f"{API}/runs/bulk"

    tagged = http.post(bulk, json={"run_ids": [first, second], "action": "tag", "tags": ["bulk", "x"]},
                       headers=team.editor.headers)
    assert tagged.status_code == 200, tagged.text
    assert [r["tags"] for r in tagged.json()["data"]] == [["bulk", "x"], ["bulk", "x"]]
    http.post(bulk, json={"run_ids": [second], "action": "untag", "tags": ["x"]}, headers=team.editor.headers)
    assert _ids(http, team, tag="x") == [first]
    canceled = http.post(bulk, json={"run_ids": [first, second], "action": "cancel"}, headers=team.editor.headers)
    assert {r["status"] for r in canceled.json()["data"]} == {"canceled"}
    deleted = http.post(bulk, json={"run_ids": [first, second], "action": "delete"}, headers=team.editor.headers)
    assert deleted.json() == {"action": "delete", "count": 2, "data": []}
    assert _ids(http, team, ids=[first, second]) == []


def test_bulk_is_all_or_nothing(app, admin, http, team):
    mine = launch_external(http, team.editor, team.project_id)["id"]
    other_team = create_team(app, admin, http, "table-other")
    foreign = launch_external(http, other_team.editor, other_team.project_id)["id"]
    running = launch_external(http, team.editor, team.project_id)["id"]
    cancel(http, team.editor, mine)
    bulk = f"{API}/runs/bulk"

    error_of(http.post(bulk, json={"run_ids": [mine, foreign], "action": "tag", "tags": ["t"]},
                       headers=team.editor.headers), 404, "RUN_NOT_FOUND")
    error_of(http.post(bulk, json={"run_ids": [mine], "action": "tag", "tags": ["t"]},
                       headers=team.viewer.headers), 403, "FORBIDDEN")
    error_of(http.post(bulk, json={"run_ids": [mine, running], "action": "delete"},
                       headers=team.editor.headers), 409, "RUN_NOT_FINISHED")
    error_of(http.post(bulk, json={"run_ids": [running, mine], "action": "cancel"},
                       headers=team.editor.headers), 409, "RUN_FINISHED")
    error_of(http.post(bulk, json={"run_ids": [mine], "action": "tag"}, headers=team.editor.headers), 422)

    assert http.get(f"{API}/runs/{mine}", headers=team.editor.headers).json()["tags"] == []
    assert http.get(f"{API}/runs/{running}", headers=team.editor.headers).json()["status"] == "running"
    assert _ids(http, team, ids=[mine, running]) == sorted([mine, running])


def test_the_runs_export_holds_every_matching_run_with_tags_params_and_summary(http, team, filter_world):
    response = http.get(f"{API}/runs/export", params={"project_id": team.project_id, "tag": "lr-sweep"},
                        headers=team.viewer.headers)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert 'filename="runs.csv"' in response.headers["content-disposition"]
    rows = {int(r["id"]): r for r in csv.DictReader(io.StringIO(response.text))}
    assert sorted(rows) == sorted([filter_world["fast"], filter_world["slow"]])
    fast = rows[filter_world["fast"]]
    assert (fast["tags"], fast["method"], fast["params.r"], fast["params.learning_rate"]) == (
        "baseline,lr-sweep", "lora", "16", "0.001")
    assert (float(fast["best_eval_loss"]), float(fast["final_eval_loss"]), float(fast["latest_train_loss"])) == (
        1.5, 2.5, 0.5)

    as_json = http.get(f"{API}/runs/export", params={"project_id": team.project_id, "format": "json",
                                                     "param": "target:mlp"}, headers=team.viewer.headers)
    [slow] = as_json.json()
    assert (slow["id"], slow["tags"], slow["params.target"], slow["best_eval_loss"]) == (
        filter_world["slow"], ["lr-sweep"], "mlp", 2.2)


def test_the_runs_export_is_not_one_page(http, team, monkeypatch):
    from tunelab.services.runs import table_exports

    monkeypatch.setattr(table_exports, "RUNS_PAGE", 2)  # pages of two, so five runs take three of them
    tag = unique("many")
    made = sorted(launch_external(http, team.editor, team.project_id)["id"] for _ in range(5))
    http.post(f"{API}/runs/bulk", json={"run_ids": made, "action": "tag", "tags": [tag]}, headers=team.editor.headers)

    response = http.get(f"{API}/runs/export", params={"tag": tag, "format": "json"}, headers=team.editor.headers)

    assert [r["id"] for r in response.json()] == made


def test_a_metrics_export_has_every_point_beyond_the_charts_max_points(http, team):
    run_id = launch_external(http, team.editor, team.project_id)["id"]
    steps = DEFAULT_MAX_POINTS * 3
    _log(http, team, run_id, [("train/loss", s, 1.0 / s) for s in range(1, steps + 1)] + [("eval/loss", 5, 2.0)])
    chart = http.get(f"{API}/runs/{run_id}/metrics", params={"keys": "train/loss"}, headers=team.viewer.headers)
    assert len(chart.json()["series"][0]["step"]) <= DEFAULT_MAX_POINTS

    response = http.get(f"{API}/runs/{run_id}/metrics/export", headers=team.viewer.headers)

    assert response.status_code == 200, response.text
    assert f'filename="run-{run_id}-metrics.csv"' in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert list(rows[0]) == ["key", "step", "value", "wall_time"]
    assert [(r["key"], int(r["step"])) for r in rows] == [("eval/loss", 5)] + [
        ("train/loss", s) for s in range(1, steps + 1)]
    assert float(rows[-1]["value"]) == 1.0 / steps
    points = http.get(f"{API}/runs/{run_id}/metrics/export", params={"format": "json"},
                      headers=team.viewer.headers).json()
    assert len(points) == steps + 1 and points[1] == {**points[1], "key": "train/loss", "step": 1, "value": 1.0}


def test_a_share_link_exports_its_own_runs_only(http, team):
    shared = launch_external(http, team.editor, team.project_id)["id"]
    hidden = launch_external(http, team.editor, team.project_id)["id"]
    _log(http, team, hidden, [("train/loss", 1, 1.0)])
    link = share_header(create_share(http, team.owner, [shared])["token"])

    exported = http.get(f"{API}/runs/export", params={"format": "json"}, headers=link).json()
    asked_for_other = http.get(f"{API}/runs/export", params={"format": "json", "ids": [hidden]}, headers=link).json()

    assert [r["id"] for r in exported] == [shared] and asked_for_other == []
    assert http.get(f"{API}/runs/{shared}/metrics/export", headers=link).status_code == 200
    error_of(http.get(f"{API}/runs/{hidden}/metrics/export", headers=link), 404, "RUN_NOT_FOUND")
    error_of(http.patch(f"{API}/runs/{shared}", json={"tags": ["x"]}, headers=link), 403, "FORBIDDEN")
    error_of(http.post(f"{API}/runs/bulk", json={"run_ids": [shared], "action": "tag", "tags": ["x"]},
                       headers=link), 403, "FORBIDDEN")


def test_deleting_a_run_deletes_its_tags(http, team, db_session):
    run_id = launch_external(http, team.editor, team.project_id)["id"]
    _patch(http, team, run_id, {"tags": ["gone"]})
    cancel(http, team.editor, run_id)

    assert http.delete(f"{API}/runs/{run_id}", headers=team.editor.headers).status_code == 204

    assert db_session.scalar(select(func.count()).select_from(RunTag).where(RunTag.run_id == run_id)) == 0


# The same filters at the service level on both databases (`session` is tests/api/conftest.py's): the JSON config
# is read differently by each.

def test_filters_agree_on_sqlite_and_postgresql(session):
    from tunelab.services import metrics

    name = uuid.uuid4().hex
    made = {}
    for label, params, tags in [("a", {"r": 16, "learning_rate": 0.001, "packing": True}, ["x", "y"]),
                                ("b", {"r": 8, "learning_rate": "auto", "packing": False}, ["x"])]:
        run = Run(project_id=1, name=f"{name}-{label}", objective="sft", method="lora", model="m",
                  config={"params": params, "external": True}, seed=0, queue="cpu", external=True)
        session.add(run)
        session.flush()
        session.add_all(RunTag(run_id=run.id, tag=t) for t in tags)
        made[label] = run.id
    metrics.ingest_points(session, made["a"], [("eval/loss", 1, 1.0, 0.0)])
    metrics.ingest_points(session, made["b"], [("eval/loss", 1, 3.0, 0.0)])

    def found(tags=None, params=None, metric=None) -> list[str]:
        filters = run_filters.parse_filters(tags, params, metric)
        page = runs.list_runs(session, project_ids=[1], q=name, filters=filters, sort="name", order="asc")
        return [r.name.rsplit("-", 1)[1] for r in page.data]

    assert found(tags=["x"]) == ["a", "b"] and found(tags=["x", "y"]) == ["a"]
    assert found(params=["r>10"]) == ["a"] and found(params=["r:8"]) == ["b"]
    assert found(params=["learning_rate<1"]) == ["a"] and found(params=["learning_rate:auto"]) == ["b"]
    assert found(params=["packing:false"]) == ["b"]
    assert found(metric=["eval/loss>2"]) == ["b"] and found(metric=["min(eval/loss)<=1"]) == ["a"]
