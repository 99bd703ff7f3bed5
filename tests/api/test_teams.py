"""Projects, roles and share links: who may do what, what a link shows, what one project hides from another,
and the audit log that records it all."""

import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import update

from tests.api.teams_helpers import (
    API,
    ARTIFACT_PATH,
    ARTIFACT_TEXT,
    EXTERNAL_RUN,
    LOG_TEXT,
    Team,
    add_member,
    cancel,
    create_member,
    create_project,
    create_share,
    create_team,
    error_of,
    launch_external,
    launch_queued,
    log_points,
    share_header,
    team_fixture,
    unique,
    upload_dataset,
    write_run_outputs,
)
from tunelab.db.models import ShareLink
from tunelab.db.session import session_scope

team = team_fixture("teams")


@pytest.fixture(scope="module")
def shared_world(team, http, settings) -> dict:
    """In the team's project: run A (finished, trained on dataset D, with an artifact and a log) and run B
    (external, with metrics)."""
    dataset = upload_dataset(http, team.owner, team.project_id)
    run_a = launch_queued(http, team.editor, team.project_id, dataset["id"])["id"]
    cancel(http, team.editor, run_a)
    write_run_outputs(settings, run_a)
    run_b = launch_external(http, team.editor, team.project_id)["id"]
    log_points(http, team.editor, run_b)
    return {"a": run_a, "b": run_b, "dataset": dataset["id"]}


def _shares_listed(http, team: Team, include_inactive: bool = False) -> dict[int, dict]:
    response = http.get(f"{API}/projects/{team.project_id}/shares", params={"include_inactive": include_inactive},
                        headers=team.editor.headers)
    assert response.status_code == 200, response.text
    return {link["id"]: link for link in response.json()["data"]}


# Share links -------------------------------------------------------------------------------------------------------

def test_a_revoked_link_is_refused_at_once(http, team, shared_world):
    run_a = shared_world["a"]
    link = create_share(http, team.editor, [run_a])
    assert link["url"] == f"/s/{link['token']}" and link["active"] is True
    opened = http.get(f"{API}/shared/{link['token']}")
    assert opened.status_code == 200 and opened.json()["run_ids"] == [run_a]
    assert opened.json()["project_name"] == team.name and team.editor.email not in opened.text
    assert http.get(f"{API}/runs/{run_a}", headers=share_header(link["token"])).status_code == 200

    revoked = http.delete(f"{API}/shares/{link['id']}", headers=team.editor.headers)

    assert revoked.status_code == 200 and revoked.json()["active"] is False and revoked.json()["revoked_at"]
    error_of(http.get(f"{API}/shared/{link['token']}"), 410, "SHARE_REVOKED")
    error_of(http.get(f"{API}/runs/{run_a}", headers=share_header(link["token"])), 410, "SHARE_REVOKED")
    error_of(http.get(f"{API}/runs/{run_a}", params={"share": link["token"]}), 410, "SHARE_REVOKED")
    error_of(http.get(f"{API}/runs/{run_a}/events", params={"share": link["token"]}), 410, "SHARE_REVOKED")
    assert link["id"] not in _shares_listed(http, team)
    assert _shares_listed(http, team, include_inactive=True)[link["id"]]["active"] is False


def test_an_expired_link_is_refused_at_once(http, team, shared_world):
    run_a = shared_world["a"]
    link = create_share(http, team.editor, [run_a], expires_at=(datetime.now(UTC) + timedelta(hours=1)).isoformat())
    assert http.get(f"{API}/runs/{run_a}", headers=share_header(link["token"])).status_code == 200
    # Time passes: the hour is over.
    with session_scope() as session:
        session.execute(update(ShareLink).where(ShareLink.id == link["id"])
                        .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))

    error_of(http.get(f"{API}/shared/{link['token']}"), 410, "SHARE_EXPIRED")
    error_of(http.get(f"{API}/runs/{run_a}", headers=share_header(link["token"])), 410, "SHARE_EXPIRED")
    assert link["id"] not in _shares_listed(http, team)


@pytest.mark.parametrize("expires_at", [
    (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
    (datetime.now(UTC) - timedelta(minutes=1)).replace(tzinfo=None).isoformat(),
], ids=["utc", "no-time-zone"])
def test_a_link_cannot_be_made_already_expired(http, team, shared_world, expires_at):
    response = http.post(f"{API}/shares", json={"run_ids": [shared_world["a"]], "expires_at": expires_at},
                         headers=team.editor.headers)
    assert "expires_at" in error_of(response, 422, "VALIDATION_ERROR")["message"]


def test_an_expiry_without_a_time_zone_is_taken_as_utc(http, team, shared_world):
    expires_at = (datetime.now(UTC) + timedelta(hours=2)).replace(tzinfo=None, microsecond=0)
    link = create_share(http, team.editor, [shared_world["a"]], expires_at=expires_at.isoformat())
    assert datetime.fromisoformat(link["expires_at"]) == expires_at.replace(tzinfo=UTC)


def test_a_link_reads_its_own_run_and_nothing_else(http, team, shared_world):
    run_a, run_b, dataset = shared_world["a"], shared_world["b"], shared_world["dataset"]
    holder = share_header(create_share(http, team.editor, [run_a])["token"])

    assert http.get(f"{API}/runs/{run_a}", headers=holder).json()["dataset_id"] == dataset
    assert http.post(f"{API}/metrics/query", json={"run_ids": [run_a]}, headers=holder).status_code == 200
    listed = http.get(f"{API}/runs", headers=holder).json()
    assert [run["id"] for run in listed["data"]] == [run_a] and listed["count"] == 1

    # Run B is in the same project, but not in the link.
    for path in (f"/runs/{run_b}", f"/runs/{run_b}/metrics", f"/runs/{run_b}/events", f"/runs/{run_b}/artifacts"):
        error_of(http.get(API + path, headers=holder), 404, "RUN_NOT_FOUND")
    for run_ids in ([run_b], [run_a, run_b]):
        error_of(http.post(f"{API}/metrics/query", json={"run_ids": run_ids}, headers=holder), 404, "RUN_NOT_FOUND")
    # Nor the data run A was trained on, nor its files: the link was made without downloads.
    error_of(http.get(f"{API}/datasets/{dataset}", headers=holder), 401, "AUTH_REQUIRED")
    error_of(http.get(f"{API}/datasets/{dataset}/preview", headers=holder), 401, "AUTH_REQUIRED")
    error_of(http.get(f"{API}/datasets", headers=holder), 401, "AUTH_REQUIRED")
    error_of(http.get(f"{API}/runs/{run_a}/artifacts", headers=holder), 403, "FORBIDDEN")
    error_of(http.get(f"{API}/runs/{run_a}/artifacts/{ARTIFACT_PATH}", headers=holder), 403, "FORBIDDEN")
    error_of(http.get(f"{API}/runs/{run_a}/logs", headers=holder), 403, "FORBIDDEN")


def test_a_link_made_with_downloads_serves_artifacts_and_logs_of_its_run_only(http, team, shared_world):
    run_a, run_b = shared_world["a"], shared_world["b"]
    link = create_share(http, team.editor, [run_a], allow_downloads=True)
    assert http.get(f"{API}/shared/{link['token']}").json()["allow_downloads"] is True
    holder = share_header(link["token"])

    artifacts = http.get(f"{API}/runs/{run_a}/artifacts", headers=holder)
    assert [a["path"] for a in artifacts.json()["data"]] == [ARTIFACT_PATH, "train.log"]
    download = http.get(f"{API}/runs/{run_a}/artifacts/{ARTIFACT_PATH}", headers=holder)
    assert download.status_code == 200 and download.text == ARTIFACT_TEXT
    by_query = http.get(f"{API}/runs/{run_a}/artifacts/{ARTIFACT_PATH}", params={"share": link["token"]})
    assert by_query.status_code == 200 and by_query.text == ARTIFACT_TEXT
    assert http.get(f"{API}/runs/{run_a}/logs", headers=holder).json()["text"] == LOG_TEXT
    error_of(http.get(f"{API}/runs/{run_b}/logs", headers=holder), 404, "RUN_NOT_FOUND")


def test_a_link_cannot_list_other_runs_by_id(http, team, shared_world):
    holder = share_header(create_share(http, team.editor, [shared_world["a"]])["token"])
    listed = http.get(f"{API}/runs", params={"ids": [shared_world["b"]]}, headers=holder).json()
    assert listed["data"] == [] and listed["count"] == 0


def test_a_link_holder_can_change_nothing(http, team):
    run = launch_external(http, team.editor, team.project_id)
    holder = share_header(create_share(http, team.editor, [run["id"]])["token"])
    point = {"points": [{"key": "train/loss", "step": 1, "value": 1.0}]}
    links_before, runs_before = set(_shares_listed(http, team)), _run_count(http, team)

    error_of(http.post(f"{API}/runs/{run['id']}/cancel", headers=holder), 403, "FORBIDDEN")
    error_of(http.post(f"{API}/runs/{run['id']}/clone", json={}, headers=holder), 403, "FORBIDDEN")
    error_of(http.delete(f"{API}/runs/{run['id']}", headers=holder), 403, "FORBIDDEN")
    error_of(http.post(f"{API}/runs/{run['id']}/metrics", json=point, headers=holder), 403, "FORBIDDEN")
    error_of(http.post(f"{API}/shares", json={"run_ids": [run["id"]]}, headers=holder), 401, "AUTH_REQUIRED")
    error_of(http.post(f"{API}/runs", json={**EXTERNAL_RUN, "project_id": team.project_id}, headers=holder), 401,
             "AUTH_REQUIRED")

    after = http.get(f"{API}/runs/{run['id']}", headers=team.viewer.headers).json()
    assert after["status"] == "running" and after["cancel_requested"] is False
    assert http.get(f"{API}/runs/{run['id']}/metrics", headers=team.viewer.headers).json()["series"] == []
    assert set(_shares_listed(http, team)) == links_before
    assert _run_count(http, team) == runs_before


def test_a_comparison_link_shows_its_runs_of_one_project_only(app, admin, http, team, shared_world):
    run_a, run_b = shared_world["a"], shared_world["b"]
    link = create_share(http, team.editor, [run_a, run_b])
    assert link["kind"] == "comparison" and link["run_ids"] == [run_a, run_b]
    listed = http.get(f"{API}/runs", headers=share_header(link["token"])).json()
    assert {run["id"] for run in listed["data"]} == {run_a, run_b} and listed["count"] == 2

    elsewhere, _ = create_project(http, team.editor, "elsewhere")
    other_run = launch_external(http, team.editor, elsewhere)["id"]
    response = http.post(f"{API}/shares", json={"run_ids": [run_a, other_run]}, headers=team.editor.headers)
    assert "one project" in error_of(response, 422, "VALIDATION_ERROR")["message"]


def _sse_events(lines):
    """(event, data) pairs from an SSE line stream."""
    event = None
    for line in lines:
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event is not None:
            yield event, json.loads(line.removeprefix("data: "))
            event = None


def test_the_share_query_param_streams_a_runs_events_until_it_ends(api_server, http, team):
    run = launch_external(http, team.editor, team.project_id)
    token = create_share(http, team.editor, [run["id"]])["token"]
    url = f"{api_server}{API}/runs/{run['id']}/events"
    deadline = time.monotonic() + 60
    seen = []
    with httpx.Client(timeout=30) as browser:
        error_of(browser.get(url), 401, "AUTH_REQUIRED")
        with browser.stream("GET", url, params={"share": token}) as stream:
            assert stream.status_code == 200
            for event, data in _sse_events(stream.iter_lines()):
                seen.append(event)
                assert time.monotonic() < deadline, f"no end event within 60 s; saw {seen}"
                if event == "status" and seen.count("status") == 1:
                    assert data["status"] == "running"
                    log_points(http, team.editor, run["id"], steps=2)
                elif event == "metrics":
                    assert [point["step"] for point in data] == [1, 2]
                    cancel(http, team.editor, run["id"])
                elif event == "end":
                    assert data == {"status": "canceled"}
                    break
    assert seen[0] == "status" and "metrics" in seen and seen[-1] == "end"


# Roles ---------------------------------------------------------------------------------------------------------------

def _run_count(http, team: Team) -> int:
    return http.get(f"{API}/runs", params={"project_id": team.project_id}, headers=team.owner.headers).json()["count"]


def test_a_viewer_cannot_launch_or_cancel_and_an_editor_can(http, team):
    launch = {**EXTERNAL_RUN, "project_id": team.project_id}
    before = _run_count(http, team)

    refused = error_of(http.post(f"{API}/runs", json=launch, headers=team.viewer.headers), 403, "FORBIDDEN")
    assert refused["details"] == {"needed": "editor", "role": "viewer"}
    assert _run_count(http, team) == before

    run = http.post(f"{API}/runs", json=launch, headers=team.editor.headers)
    assert run.status_code == 201 and run.json()["project_id"] == team.project_id
    assert _run_count(http, team) == before + 1
    run_id = run.json()["id"]
    error_of(http.post(f"{API}/runs/{run_id}/cancel", headers=team.viewer.headers), 403, "FORBIDDEN")
    assert http.get(f"{API}/runs/{run_id}", headers=team.viewer.headers).json()["status"] == "running"
    assert cancel(http, team.editor, run_id)["status"] == "canceled"


def _members(http, team: Team, who=None) -> dict[str, str]:
    response = http.get(f"{API}/projects/{team.project_id}/members", headers=(who or team.owner).headers)
    assert response.status_code == 200, response.text
    return {member["email"]: member["role"] for member in response.json()["data"]}


def test_an_owner_manages_members_and_an_editor_cannot(app, admin, http, team):
    newcomer = create_member(app, admin, "newcomer")
    members = f"{API}/projects/{team.project_id}/members"
    error_of(http.post(members, json={"email": newcomer.email}, headers=team.editor.headers), 403, "FORBIDDEN")
    error_of(http.get(f"{API}/projects/{team.project_id}", headers=newcomer.headers), 404, "PROJECT_NOT_FOUND")

    added = http.post(members, json={"email": newcomer.email.upper(), "role": "viewer"}, headers=team.owner.headers)
    assert added.status_code == 201 and added.json()["user_id"] == newcomer.user_id and added.json()["added_at"]
    assert http.get(f"{API}/projects/{team.project_id}", headers=newcomer.headers).json()["role"] == "viewer"
    error_of(http.post(members, json={"email": newcomer.email}, headers=team.owner.headers), 409, "ALREADY_MEMBER")
    error_of(http.post(members, json={"email": "nobody@nowhere.test"}, headers=team.owner.headers), 404,
             "USER_NOT_FOUND")

    error_of(http.patch(f"{members}/{newcomer.user_id}", json={"role": "editor"}, headers=team.editor.headers), 403,
             "FORBIDDEN")
    promoted = http.patch(f"{members}/{newcomer.user_id}", json={"role": "editor"}, headers=team.owner.headers)
    assert promoted.status_code == 200 and _members(http, team, newcomer)[newcomer.email] == "editor"
    run = launch_external(http, newcomer, team.project_id)

    error_of(http.delete(f"{members}/{newcomer.user_id}", headers=team.editor.headers), 403, "FORBIDDEN")
    assert http.delete(f"{members}/{newcomer.user_id}", headers=team.owner.headers).status_code == 204
    assert newcomer.email not in _members(http, team)
    error_of(http.get(f"{API}/projects/{team.project_id}", headers=newcomer.headers), 404, "PROJECT_NOT_FOUND")
    error_of(http.get(f"{API}/runs/{run['id']}", headers=newcomer.headers), 404, "RUN_NOT_FOUND")


def test_the_last_owner_cannot_be_removed_or_demoted(app, admin, http):
    team = create_team(app, admin, http, "owners")
    me = f"{API}/projects/{team.project_id}/members/{team.owner.user_id}"

    error_of(http.delete(me, headers=team.owner.headers), 409, "LAST_OWNER")
    error_of(http.patch(me, json={"role": "editor"}, headers=team.owner.headers), 409, "LAST_OWNER")
    assert _members(http, team)[team.owner.email] == "owner"

    successor = f"{API}/projects/{team.project_id}/members/{team.editor.user_id}"
    assert http.patch(successor, json={"role": "owner"}, headers=team.owner.headers).status_code == 200
    assert http.patch(me, json={"role": "viewer"}, headers=team.owner.headers).json()["role"] == "viewer"
    error_of(http.patch(successor, json={"role": "editor"}, headers=team.editor.headers), 409, "LAST_OWNER")
    error_of(http.delete(successor, headers=team.editor.headers), 409, "LAST_OWNER")
    assert _members(http, team) == {team.owner.email: "viewer", team.editor.email: "owner",
                                    team.viewer.email: "viewer"}


def test_an_owner_deletes_a_project_with_everything_in_it(app, admin, http):
    team = create_team(app, admin, http, "doomed")
    dataset = upload_dataset(http, team.owner, team.project_id)["id"]
    run = launch_external(http, team.editor, team.project_id)["id"]
    log_points(http, team.editor, run)
    link = create_share(http, team.editor, [run])["token"]
    project = f"{API}/projects/{team.project_id}"

    error_of(http.delete(project, headers=team.owner.headers), 409, "RUN_NOT_FINISHED")
    cancel(http, team.editor, run)
    error_of(http.delete(project, headers=team.editor.headers), 403, "FORBIDDEN")
    assert http.delete(project, headers=team.owner.headers).status_code == 204

    error_of(http.get(project, headers=team.owner.headers), 404, "PROJECT_NOT_FOUND")
    error_of(http.get(f"{API}/runs/{run}", headers=team.owner.headers), 404, "RUN_NOT_FOUND")
    error_of(http.get(f"{API}/datasets/{dataset}", headers=team.owner.headers), 404, "DATASET_NOT_FOUND")
    error_of(http.get(f"{API}/shared/{link}"), 404, "SHARE_NOT_FOUND")
    assert http.get(f"{API}/projects", headers=team.viewer.headers).json() == {"data": [], "count": 0}


# Isolation -----------------------------------------------------------------------------------------------------------

def test_a_member_of_one_project_sees_nothing_of_another(app, admin, http):
    mine = create_member(app, admin, "x-owner")
    theirs = create_member(app, admin, "y-owner")
    x, _ = create_project(http, mine, "x")
    y, _ = create_project(http, theirs, "y")
    secret = unique("secret")
    y_run = launch_external(http, theirs, y, name=secret)["id"]
    log_points(http, theirs, y_run)
    y_dataset = upload_dataset(http, theirs, y)["id"]
    x_run = launch_external(http, mine, x, name=unique("visible"))["id"]
    x_dataset = upload_dataset(http, mine, x)["id"]
    as_me = mine.headers

    def run_list(**params) -> tuple[set[int], int]:
        page = http.get(f"{API}/runs", params=params, headers=as_me).json()
        return {run["id"] for run in page["data"]}, page["count"]

    assert run_list() == ({x_run}, 1)
    assert run_list(project_id=x) == ({x_run}, 1)
    assert run_list(q=secret) == (set(), 0)
    assert run_list(ids=[y_run]) == (set(), 0)
    assert run_list(ids=[y_run, x_run]) == ({x_run}, 1)
    error_of(http.get(f"{API}/runs", params={"project_id": y}, headers=as_me), 404, "PROJECT_NOT_FOUND")
    for path in (f"/runs/{y_run}", f"/runs/{y_run}/events", f"/runs/{y_run}/metrics", f"/runs/{y_run}/artifacts"):
        error_of(http.get(API + path, headers=as_me), 404, "RUN_NOT_FOUND")
    for run_ids in ([y_run], [x_run, y_run]):
        error_of(http.post(f"{API}/metrics/query", json={"run_ids": run_ids}, headers=as_me), 404, "RUN_NOT_FOUND")
    error_of(http.post(f"{API}/shares", json={"run_ids": [y_run]}, headers=as_me), 404, "RUN_NOT_FOUND")

    datasets = http.get(f"{API}/datasets", params={"limit": 100}, headers=as_me).json()
    # Bundled samples are for everyone; of the rest, only X's.
    assert {d["id"] for d in datasets["data"] if not d["bundled"]} == {x_dataset}
    assert datasets["count"] == len(datasets["data"]) and y_dataset not in {d["id"] for d in datasets["data"]}
    error_of(http.get(f"{API}/datasets", params={"project_id": y}, headers=as_me), 404, "PROJECT_NOT_FOUND")
    error_of(http.get(f"{API}/datasets/{y_dataset}", headers=as_me), 404, "DATASET_NOT_FOUND")

    projects = http.get(f"{API}/projects", headers=as_me).json()
    assert [p["id"] for p in projects["data"]] == [x] and projects["count"] == 1
    for path in ("", "/members", "/shares", "/audit"):
        error_of(http.get(f"{API}/projects/{y}{path}", headers=as_me), 404, "PROJECT_NOT_FOUND")
    assert http.get(f"{API}/auth/me", headers=as_me).json()["projects"] == [
        {"project_id": x, "project_name": projects["data"][0]["name"], "role": "owner"}]


# Audit log -----------------------------------------------------------------------------------------------------------

def test_the_audit_log_records_who_did_what_for_owners_only(app, admin, http):
    team = create_team(app, admin, http, "audited")
    dataset = upload_dataset(http, team.editor, team.project_id)
    run = launch_external(http, team.editor, team.project_id)
    cancel(http, team.editor, run["id"])
    link = create_share(http, team.editor, [run["id"]])
    assert http.delete(f"{API}/shares/{link['id']}", headers=team.editor.headers).status_code == 200
    newcomer = create_member(app, admin, "audited-newcomer")
    add_member(http, team.owner, team.project_id, newcomer.email, "viewer")

    audit = f"{API}/projects/{team.project_id}/audit"
    error_of(http.get(audit, headers=team.editor.headers), 403, "FORBIDDEN")
    error_of(http.get(audit, headers=team.viewer.headers), 403, "FORBIDDEN")
    log = http.get(audit, headers=team.owner.headers).json()
    seen = [(e["action"], e["actor_label"], e["target_id"]) for e in reversed(log["data"])]
    assert seen == [
        ("project.create", team.owner.email, team.project_id),
        ("member.add", team.owner.email, team.editor.user_id),
        ("member.add", team.owner.email, team.viewer.user_id),
        ("dataset.upload", team.editor.email, dataset["id"]),
        ("run.launch", team.editor.email, run["id"]),
        ("run.cancel", team.editor.email, run["id"]),
        ("share.create", team.editor.email, link["id"]),
        ("share.revoke", team.editor.email, link["id"]),
        ("member.add", team.owner.email, newcomer.user_id),
    ]
    assert log["count"] == len(seen) and log["next_before"] is None
    assert newcomer.email in log["data"][0]["summary"]
