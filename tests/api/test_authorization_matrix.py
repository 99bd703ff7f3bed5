"""Every operation of the OpenAPI document, called by each kind of caller, is allowed or denied as TABLE says.

A route added without a row here fails `test_every_operation_has_an_expectation`; a row whose declared policies
differ from the route's fails `test_table_names_each_routes_declared_policies`. Allowed calls are built to succeed
(2xx), so "allowed" is seen, not inferred from the absence of a refusal; destructive calls get throwaway targets.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.teams_helpers import (
    API,
    ARTIFACT_PATH,
    IDLE_QUEUE,
    PASSWORD,
    BrowserSession,
    Team,
    add_member,
    bearer,
    cancel,
    create_member,
    create_project,
    create_share,
    create_team,
    create_user,
    error_of,
    launch_external,
    launch_queued,
    log_points,
    new_email,
    share_header,
    sign_in,
    stateless_client,
    unique,
    upload_dataset,
    write_run_outputs,
)
from tests.conftest import ADMIN_EMAIL, ADMIN_PASSWORD
from tunelab.core.settings import get_settings

# Who calls. Project P has an owner, an editor and a viewer; run A of P is finished, has metrics, an artifact and a
# log, and is shared by link L (made without downloads).
COLUMNS = (
    "anonymous",  # no credentials at all
    "viewer",     # P's viewer, signed in with a browser session (cookie + X-CSRF-Token)
    "editor",     # P's editor, browser session
    "owner",      # P's owner, browser session
    "outsider",   # owner of another project, not a member of P, browser session
    "admin",      # the admin, not a member of P (being admin opens no project), browser session
    "share",      # L's token in X-Share-Token; for a call on another run of P, a link to that run
    "token",      # P's editor with an API token
)

# One expectation per column, in COLUMNS order: ok = allowed; 401, 403, or 404 = the not-a-member refusal.
#                anon view edit own  out  adm  share token
PUBLIC       = "ok   ok   ok   ok   ok   ok   ok    ok"
SIGNED_IN    = "401  ok   ok   ok   ok   ok   401   ok"
READER       = "401  ok   ok   ok   ok   ok   ok    ok"
ADMIN_ONLY   = "401  403  403  403  403  ok   401   403"
PROJECT_VIEW = "401  ok   ok   ok   404  404  401   ok"
PROJECT_EDIT = "401  403  ok   ok   404  404  401   ok"
PROJECT_OWN  = "401  403  403  ok   404  404  401   403"
RUN_VIEW     = "401  ok   ok   ok   404  404  ok    ok"
RUN_EDIT     = "401  403  ok   ok   404  404  403   ok"
RUN_DOWNLOAD = "401  ok   ok   ok   404  404  403   ok"
DATASET_VIEW = "401  ok   ok   ok   404  404  401   ok"

# The 404 that hides what a caller is not a member of (SHARE_NOT_FOUND: a link of a project you are not in).
NOT_MEMBER_CODES = {"PROJECT_NOT_FOUND", "RUN_NOT_FOUND", "DATASET_NOT_FOUND", "SHARE_NOT_FOUND", "STUDY_NOT_FOUND",
                    "PIPELINE_NOT_FOUND"}


@dataclass
class Call:
    path: str  # under /api/v1
    headers: dict[str, str] | None = None  # None: the column's own credentials
    json: Any = None
    data: dict | None = None
    files: dict | None = None
    settings: dict | None = None  # settings changed for this call only


@dataclass
class World:
    app: Any
    admin: TestClient
    http: TestClient
    team: Team
    browsers: dict[str, BrowserSession]
    emails: dict[str, tuple[str, str]]  # column -> (email, password) of the browser columns
    signin_email: str
    dataset_id: int
    run_a: int
    running_run: int
    source_run: int
    link_a: str
    invite_token: str
    _links: dict[int, str] = field(default_factory=dict)
    _page_links: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def project_id(self) -> int:
        return self.team.project_id

    def credentials(self, who: str) -> dict[str, str]:
        if who == "anonymous":
            return {}
        if who == "share":
            return share_header(self.link_a)
        if who == "token":
            return self.team.editor.headers
        return self.browsers[who].headers

    def share_for(self, who: str, run_id: int) -> dict[str, str] | None:
        """The share column calls a run with a link to that very run: its refusal is then read-only-ness."""
        if who != "share":
            return None
        if run_id not in self._links:
            self._links[run_id] = create_share(self.http, self.team.owner, [run_id])["token"]
        return share_header(self._links[run_id])

    def fresh_credentials(self, who: str) -> dict[str, str]:
        """A browser column's credentials from a new sign-in, for a call that ends the session it is made with."""
        if who in self.emails:
            return sign_in(self.app, *self.emails[who]).headers
        return self.credentials(who)

    def own_token_id(self, who: str) -> int:
        """An API token of the caller's own (of the viewer's, for callers with no account)."""
        creator = self.credentials(who if who not in ("anonymous", "share") else "viewer")
        response = self.http.post(f"{API}/auth/tokens", json={"name": unique("throwaway")}, headers=creator)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def invite(self) -> str:
        return create_user(self.admin, password=None, prefix="invitee")["invite_url"].rsplit("/", 1)[1]

    def new_member(self) -> int:
        user = create_user(self.admin, password=None, prefix="throwaway-member")["user"]
        add_member(self.http, self.team.owner, self.project_id, user["email"], "viewer")
        return user["id"]

    def new_project(self) -> int:
        """A project with P's members in P's roles."""
        project_id, _ = create_project(self.http, self.team.owner, "throwaway")
        add_member(self.http, self.team.owner, project_id, self.team.editor.email, "editor")
        add_member(self.http, self.team.owner, project_id, self.team.viewer.email, "viewer")
        return project_id

    def canceled_training_run(self) -> int:
        """A real run (no worker takes its queue), canceled: resuming puts it back in its queue."""
        run_id = launch_queued(self.http, self.team.editor, self.project_id, self.dataset_id)["id"]
        cancel(self.http, self.team.editor, run_id)
        return run_id

    def exportable_run(self) -> int:
        """A real run, canceled, with a LoRA adapter on disk: an export of it is queued (no worker takes its queue)."""
        run_id = self.canceled_training_run()
        write_run_outputs(get_settings(), run_id)
        return run_id

    def ended_playground_request(self) -> str:
        """A playground request of P whose stream has ended, as the inference worker leaves one (none is running)."""
        import json
        import secrets

        from tunelab.core.redis import get_redis

        request_id, prefix = secrets.token_hex(12), f"{get_settings().redis_namespace}:playground"
        get_redis().set(f"{prefix}:{request_id}:request", json.dumps({"project_id": self.project_id}), ex=600)
        get_redis().xadd(f"{prefix}:{request_id}", {"event": "end", "data": "{}"})
        return request_id

    def study_body(self) -> dict:
        """A study of one run that no worker takes (its queue is never consumed)."""
        return {"project_id": self.project_id, "name": unique("matrix-study"), "model": "tunelab-tiny",
                "dataset_id": self.dataset_id, "methods": ["lora"], "seeds": [1], "budget": {"max_steps": 2},
                "queue": IDLE_QUEUE}

    def new_study(self) -> int:
        response = self.http.post(f"{API}/studies", json=self.study_body(), headers=self.team.editor.headers)
        assert response.status_code == 201, response.text
        return response.json()["study"]["id"]

    def study_share_for(self, who: str, study_id: int) -> dict[str, str] | None:
        """The share column calls a study with a link to that very study."""
        return self._page_share_for(who, "studies", study_id)

    def pipeline_body(self) -> dict:
        """A pipeline of one stage that no worker takes (its queue is never consumed)."""
        return {"project_id": self.project_id, "name": unique("matrix-pipeline"), "model": "tunelab-tiny",
                "queue": IDLE_QUEUE, "stages": [{"name": "SFT", "objective": "sft", "method": "lora",
                                                 "dataset_id": self.dataset_id, "params": {"max_steps": 2}}]}

    def new_pipeline(self) -> int:
        response = self.http.post(f"{API}/pipelines", json=self.pipeline_body(), headers=self.team.editor.headers)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def pipeline_share_for(self, who: str, pipeline_id: int) -> dict[str, str] | None:
        """The share column calls a pipeline with a link to that very pipeline."""
        return self._page_share_for(who, "pipelines", pipeline_id)

    def _page_share_for(self, who: str, pages: str, page_id: int) -> dict[str, str] | None:
        if who != "share":
            return None
        if (pages, page_id) not in self._page_links:
            response = self.http.post(f"{API}/{pages}/{page_id}/shares", headers=self.team.owner.headers)
            assert response.status_code == 201, response.text
            self._page_links[pages, page_id] = response.json()["token"]
        return share_header(self._page_links[pages, page_id])

    def new_run(self, finished: bool) -> int:
        run_id = launch_external(self.http, self.team.editor, self.project_id)["id"]
        if finished:
            cancel(self.http, self.team.editor, run_id)
        return run_id


def _static(path: str, **kwargs) -> Callable[[World, str], Call]:
    return lambda w, who: Call(path.format(w=w), **kwargs)


def _new_run_call(suffix: str, finished: bool) -> Callable[[World, str], Call]:
    def build(w: World, who: str) -> Call:
        run_id = w.new_run(finished)
        return Call(f"/runs/{run_id}{suffix}", headers=w.share_for(who, run_id))

    return build


def _jsonl() -> bytes:
    return f'{{"instruction": "Say {unique("x")}.", "input": "", "output": "ok"}}\n'.encode()


@dataclass(frozen=True)
class Row:
    policies: str  # the access policies the route declares (tunelab.api.policies), space-separated
    cells: str  # one of the patterns above
    build: Callable[[World, str], Call]
    ok_status: int | None = None  # what an allowed call answers, when not 2xx


TABLE: dict[tuple[str, str], Row] = {
    # Accounts
    ("GET", "/api/v1/auth/setup"): Row("public", PUBLIC, _static("/auth/setup")),
    ("POST", "/api/v1/auth/first-admin"): Row(
        "public", PUBLIC, lambda w, who: Call("/auth/first-admin", json={"email": new_email(), "password": PASSWORD}),
        ok_status=409),  # open to all, and refused to all: the session already has its admin
    ("POST", "/api/v1/auth/sign-in"): Row(
        "public", PUBLIC, lambda w, who: Call("/auth/sign-in", json={"email": w.signin_email, "password": PASSWORD})),
    ("POST", "/api/v1/auth/sign-out"): Row(
        "signed_in", SIGNED_IN, lambda w, who: Call("/auth/sign-out", headers=w.fresh_credentials(who))),
    ("POST", "/api/v1/auth/sign-up"): Row(
        "public", PUBLIC, lambda w, who: Call("/auth/sign-up", json={"email": new_email(), "password": PASSWORD},
                                              settings={"open_signup": True})),
    ("GET", "/api/v1/auth/invites/{token}"): Row("public", PUBLIC, _static("/auth/invites/{w.invite_token}")),
    ("POST", "/api/v1/auth/invites/accept"): Row(
        "public", PUBLIC, lambda w, who: Call("/auth/invites/accept", json={"token": w.invite(), "password": PASSWORD})),
    ("GET", "/api/v1/auth/me"): Row("signed_in", SIGNED_IN, _static("/auth/me")),
    ("GET", "/api/v1/auth/tokens"): Row("signed_in", SIGNED_IN, _static("/auth/tokens")),
    ("POST", "/api/v1/auth/tokens"): Row("signed_in", SIGNED_IN, _static("/auth/tokens", json={"name": "matrix"})),
    ("DELETE", "/api/v1/auth/tokens/{token_id}"): Row(
        "signed_in", SIGNED_IN, lambda w, who: Call(f"/auth/tokens/{w.own_token_id(who)}")),
    ("GET", "/api/v1/users"): Row("admin", ADMIN_ONLY, _static("/users")),
    ("POST", "/api/v1/users"): Row("admin", ADMIN_ONLY, lambda w, who: Call("/users", json={"email": new_email()})),
    ("PATCH", "/api/v1/users/{user_id}"): Row(
        "admin", ADMIN_ONLY,
        lambda w, who: Call(f"/users/{create_user(w.admin, prefix='patched')['user']['id']}", json={"is_active": False})),
    ("POST", "/api/v1/users/{user_id}/invitation"): Row(
        "admin", ADMIN_ONLY,
        lambda w, who: Call(f"/users/{create_user(w.admin, password=None, prefix='reinvited')['user']['id']}/invitation")),
    # Projects
    ("GET", "/api/v1/projects"): Row("signed_in", SIGNED_IN, _static("/projects")),
    ("POST", "/api/v1/projects"): Row(
        "signed_in", SIGNED_IN, lambda w, who: Call("/projects", json={"name": unique("matrix")})),
    ("GET", "/api/v1/projects/{project_id}"): Row(
        "signed_in project:viewer", PROJECT_VIEW, _static("/projects/{w.project_id}")),
    ("PATCH", "/api/v1/projects/{project_id}"): Row(
        "signed_in project:owner", PROJECT_OWN,
        lambda w, who: Call(f"/projects/{w.project_id}", json={"name": w.team.name})),
    ("DELETE", "/api/v1/projects/{project_id}"): Row(
        "project:owner", PROJECT_OWN, lambda w, who: Call(f"/projects/{w.new_project()}")),
    ("GET", "/api/v1/projects/{project_id}/members"): Row(
        "project:viewer", PROJECT_VIEW, _static("/projects/{w.project_id}/members")),
    ("POST", "/api/v1/projects/{project_id}/members"): Row(
        "signed_in project:owner", PROJECT_OWN,
        lambda w, who: Call(f"/projects/{w.project_id}/members",
                            json={"email": create_user(w.admin, password=None)["user"]["email"], "role": "viewer"})),
    ("PATCH", "/api/v1/projects/{project_id}/members/{user_id}"): Row(
        "signed_in project:owner", PROJECT_OWN,
        lambda w, who: Call(f"/projects/{w.project_id}/members/{w.new_member()}", json={"role": "editor"})),
    ("DELETE", "/api/v1/projects/{project_id}/members/{user_id}"): Row(
        "signed_in project:owner", PROJECT_OWN,
        lambda w, who: Call(f"/projects/{w.project_id}/members/{w.new_member()}")),
    ("GET", "/api/v1/projects/{project_id}/audit"): Row(
        "project:owner", PROJECT_OWN, _static("/projects/{w.project_id}/audit")),
    ("GET", "/api/v1/projects/{project_id}/shares"): Row(
        "project:editor", PROJECT_EDIT, _static("/projects/{w.project_id}/shares")),
    # Runs
    ("GET", "/api/v1/runs"): Row("signed_in_or_share", READER, _static("/runs")),
    ("GET", "/api/v1/metric-keys"): Row("signed_in_or_share", READER, _static("/metric-keys")),
    ("POST", "/api/v1/runs"): Row(
        "signed_in", PROJECT_EDIT,
        lambda w, who: Call("/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True,
                                           "project_id": w.project_id})),
    ("GET", "/api/v1/runs/{run_id}"): Row("run:viewer", RUN_VIEW, _static("/runs/{w.run_a}")),
    ("PATCH", "/api/v1/runs/{run_id}"): Row(
        "signed_in_or_share run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{w.run_a}", headers=w.share_for(who, w.run_a), json={"tags": ["matrix"]})),
    ("GET", "/api/v1/runs/export"): Row("signed_in_or_share", READER, _static("/runs/export")),
    ("POST", "/api/v1/runs/bulk"): Row(
        "signed_in_or_share", RUN_EDIT,
        lambda w, who: Call("/runs/bulk", headers=w.share_for(who, (run_id := w.new_run(True))),
                            json={"run_ids": [run_id], "action": "tag", "tags": ["matrix"]})),
    ("DELETE", "/api/v1/runs/{run_id}"): Row("signed_in_or_share run:editor", RUN_EDIT, _new_run_call("", True)),
    ("POST", "/api/v1/runs/{run_id}/cancel"): Row(
        "signed_in_or_share run:editor", RUN_EDIT, _new_run_call("/cancel", False)),
    ("POST", "/api/v1/runs/{run_id}/finish"): Row(
        "signed_in_or_share run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{(run_id := w.new_run(False))}/finish", headers=w.share_for(who, run_id),
                            json={"status": "succeeded"})),
    ("POST", "/api/v1/runs/{run_id}/resume"): Row(
        "signed_in_or_share run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{(run_id := w.canceled_training_run())}/resume", headers=w.share_for(who, run_id))),
    ("POST", "/api/v1/runs/{run_id}/clone"): Row(
        "signed_in_or_share run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{w.source_run}/clone", headers=w.share_for(who, w.source_run),
                            json={"name": unique("clone")})),
    ("GET", "/api/v1/runs/{run_id}/events"): Row(
        "signed_in_or_share run:viewer", RUN_VIEW, _static("/runs/{w.run_a}/events")),
    ("GET", "/api/v1/runs/{run_id}/logs"): Row("run:download", RUN_DOWNLOAD, _static("/runs/{w.run_a}/logs")),
    ("GET", "/api/v1/runs/{run_id}/artifacts"): Row("run:download", RUN_DOWNLOAD,
                                                    _static("/runs/{w.run_a}/artifacts")),
    ("GET", "/api/v1/runs/{run_id}/artifacts/{path}"): Row(
        "run:download", RUN_DOWNLOAD, _static("/runs/{w.run_a}/artifacts/" + ARTIFACT_PATH)),
    ("GET", "/api/v1/runs/{run_id}/archives/{folder}.zip"): Row(
        "run:download", RUN_DOWNLOAD, _static("/runs/{w.run_a}/archives/adapter.zip")),
    ("GET", "/api/v1/runs/{run_id}/exports"): Row("run:download", RUN_DOWNLOAD, _static("/runs/{w.run_a}/exports")),
    ("POST", "/api/v1/runs/{run_id}/exports"): Row(
        "signed_in_or_share run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{(run_id := w.exportable_run())}/exports", headers=w.share_for(who, run_id))),
    ("GET", "/api/v1/runs/{run_id}/samples"): Row("run:viewer", RUN_VIEW, _static("/runs/{w.run_a}/samples")),
    ("GET", "/api/v1/runs/{run_id}/rl-samples"): Row("run:viewer", RUN_VIEW, _static("/runs/{w.run_a}/rl-samples")),
    ("GET", "/api/v1/runs/{run_id}/predictions"): Row("run:viewer", RUN_VIEW,
                                                      _static("/runs/{w.run_a}/predictions")),
    ("GET", "/api/v1/runs/{run_id}/lineage"): Row("signed_in_or_share run:viewer", RUN_VIEW,
                                                  _static("/runs/{w.run_a}/lineage")),
    # Playground: editors spend compute; run A is canceled, so an allowed request is refused for that (409).
    ("POST", "/api/v1/playground"): Row(
        "signed_in", PROJECT_EDIT,
        lambda w, who: Call("/playground", json={"project_id": w.project_id, "run_ids": [w.run_a], "prompt": "Hi"}),
        ok_status=409),
    ("GET", "/api/v1/playground/{request_id}/events"): Row(
        "signed_in", PROJECT_EDIT, lambda w, who: Call(f"/playground/{w.ended_playground_request()}/events")),
    ("GET", "/api/v1/runs/{run_id}/metrics"): Row("run:viewer", RUN_VIEW, _static("/runs/{w.run_a}/metrics")),
    ("GET", "/api/v1/runs/{run_id}/metrics/export"): Row(
        "run:viewer", RUN_VIEW, _static("/runs/{w.run_a}/metrics/export")),
    ("POST", "/api/v1/runs/{run_id}/metrics"): Row(
        "run:editor", RUN_EDIT,
        lambda w, who: Call(f"/runs/{w.running_run}/metrics", headers=w.share_for(who, w.running_run),
                            json={"points": [{"key": "train/loss", "step": 7, "value": 1.5}]})),
    ("POST", "/api/v1/metrics/query"): Row(
        "signed_in_or_share", RUN_VIEW, lambda w, who: Call("/metrics/query", json={"run_ids": [w.run_a]})),
    # Datasets
    ("GET", "/api/v1/datasets"): Row("signed_in", SIGNED_IN, _static("/datasets")),
    ("POST", "/api/v1/datasets"): Row(
        "signed_in", PROJECT_EDIT,
        lambda w, who: Call("/datasets", files={"file": ("rows.jsonl", _jsonl(), "application/jsonl")},
                            data={"project_id": str(w.project_id)})),
    ("GET", "/api/v1/datasets/{dataset_id}"): Row(
        "dataset:viewer", DATASET_VIEW, _static("/datasets/{w.dataset_id}")),
    ("GET", "/api/v1/datasets/{dataset_id}/preview"): Row(
        "dataset:viewer", DATASET_VIEW, _static("/datasets/{w.dataset_id}/preview")),
    ("DELETE", "/api/v1/datasets/{dataset_id}"): Row(
        "signed_in dataset:editor", PROJECT_EDIT,
        lambda w, who: Call(f"/datasets/{upload_dataset(w.http, w.team.editor, w.project_id)['id']}")),
    # Share links
    ("POST", "/api/v1/shares"): Row(
        "signed_in", PROJECT_EDIT, lambda w, who: Call("/shares", json={"run_ids": [w.run_a]})),
    ("DELETE", "/api/v1/shares/{share_id}"): Row(
        "signed_in share:editor", PROJECT_EDIT,
        lambda w, who: Call(f"/shares/{create_share(w.http, w.team.owner, [w.run_a])['id']}")),
    ("GET", "/api/v1/shared/{token}"): Row("public", PUBLIC, _static("/shared/{w.link_a}")),
    # Studies
    ("GET", "/api/v1/studies"): Row("signed_in", SIGNED_IN, _static("/studies")),
    ("POST", "/api/v1/studies"): Row("signed_in", PROJECT_EDIT, lambda w, who: Call("/studies", json=w.study_body())),
    ("GET", "/api/v1/studies/{study_id}"): Row(
        "signed_in_or_share study:viewer", RUN_VIEW,
        lambda w, who: Call(f"/studies/{(study_id := w.new_study())}", headers=w.study_share_for(who, study_id))),
    ("DELETE", "/api/v1/studies/{study_id}"): Row(
        "signed_in_or_share study:editor", RUN_EDIT,
        lambda w, who: Call(f"/studies/{(study_id := w.new_study())}", headers=w.study_share_for(who, study_id))),
    ("POST", "/api/v1/studies/{study_id}/runs"): Row(
        "signed_in_or_share study:editor", RUN_EDIT,
        lambda w, who: Call(f"/studies/{(study_id := w.new_study())}/runs", headers=w.study_share_for(who, study_id),
                            json={"seeds": [2]})),
    ("POST", "/api/v1/studies/{study_id}/clone"): Row(
        "signed_in_or_share study:editor", RUN_EDIT,
        lambda w, who: Call(f"/studies/{(study_id := w.new_study())}/clone",
                            headers=w.study_share_for(who, study_id))),
    ("POST", "/api/v1/studies/{study_id}/shares"): Row(
        "signed_in_or_share study:editor", RUN_EDIT,
        lambda w, who: Call(f"/studies/{(study_id := w.new_study())}/shares",
                            headers=w.study_share_for(who, study_id))),
    # Pipelines
    ("GET", "/api/v1/pipeline-templates"): Row("signed_in", SIGNED_IN, _static("/pipeline-templates")),
    ("GET", "/api/v1/pipelines"): Row("signed_in", SIGNED_IN, _static("/pipelines")),
    ("POST", "/api/v1/pipelines"): Row(
        "signed_in", PROJECT_EDIT, lambda w, who: Call("/pipelines", json=w.pipeline_body())),
    ("GET", "/api/v1/pipelines/{pipeline_id}"): Row(
        "signed_in_or_share pipeline:viewer", RUN_VIEW,
        lambda w, who: Call(f"/pipelines/{(pid := w.new_pipeline())}", headers=w.pipeline_share_for(who, pid))),
    ("DELETE", "/api/v1/pipelines/{pipeline_id}"): Row(
        "signed_in_or_share pipeline:editor", RUN_EDIT,
        lambda w, who: Call(f"/pipelines/{(pid := w.new_pipeline())}", headers=w.pipeline_share_for(who, pid))),
    ("POST", "/api/v1/pipelines/{pipeline_id}/cancel"): Row(
        "signed_in_or_share pipeline:editor", RUN_EDIT,
        lambda w, who: Call(f"/pipelines/{(pid := w.new_pipeline())}/cancel", headers=w.pipeline_share_for(who, pid))),
    ("POST", "/api/v1/pipelines/{pipeline_id}/clone"): Row(
        "signed_in_or_share pipeline:editor", RUN_EDIT,
        lambda w, who: Call(f"/pipelines/{(pid := w.new_pipeline())}/clone", headers=w.pipeline_share_for(who, pid))),
    ("POST", "/api/v1/pipelines/{pipeline_id}/shares"): Row(
        "signed_in_or_share pipeline:editor", RUN_EDIT,
        lambda w, who: Call(f"/pipelines/{(pid := w.new_pipeline())}/shares", headers=w.pipeline_share_for(who, pid))),
    ("POST", "/api/v1/cost-table"): Row(
        "signed_in_or_share", RUN_VIEW, lambda w, who: Call("/cost-table", json={"run_ids": [w.run_a]})),
    # The rest
    ("GET", "/api/v1/models"): Row("signed_in", SIGNED_IN, _static("/models")),
    ("GET", "/api/v1/methods"): Row("public", PUBLIC, _static("/methods")),
    ("GET", "/api/v1/queues"): Row("signed_in", SIGNED_IN, _static("/queues")),
    ("POST", "/api/v1/estimates"): Row(
        "signed_in", SIGNED_IN, _static("/estimates", json={"method": "lora", "model": "tunelab-tiny"})),
    ("GET", "/api/v1/health"): Row("public", PUBLIC, _static("/health")),
}


def _operations(app) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in app.openapi()["paths"].items() for method in item}


def _declared_policies(app) -> dict[tuple[str, str], list[str]]:
    # The router spells a path parameter that may hold slashes {path:path}; the OpenAPI document spells it {path}.
    return {(method, re.sub(r"\{(\w+):\w+\}", r"{\1}", path)): names
            for (method, path), names in app.state.route_policies.items()}


def test_every_operation_has_an_expectation(app):
    operations = _operations(app)
    assert operations - TABLE.keys() == set(), "operations without a row in TABLE"
    assert TABLE.keys() - operations == set(), "rows of TABLE for operations the API does not have"


def test_table_names_each_routes_declared_policies(app):
    declared = _declared_policies(app)
    assert declared.keys() == TABLE.keys()
    wrong = {key: (sorted(declared[key]), sorted(row.policies.split()))
             for key, row in TABLE.items() if sorted(declared[key]) != sorted(row.policies.split())}
    assert wrong == {}, "route: (declared, in TABLE)"


def test_table_rows_are_well_formed():
    for key, row in TABLE.items():
        cells = row.cells.split()
        assert len(cells) == len(COLUMNS) and set(cells) <= {"ok", "401", "403", "404"}, key
        # Only a public route may let an anonymous caller in, and it lets everyone in.
        assert (cells[0] == "ok") == (row.policies == "public"), key
        assert row.policies != "public" or set(cells) == {"ok"}, key


@pytest.fixture(scope="module")
def world(app, settings, admin_token):
    with TestClient(app, headers=bearer(admin_token)) as admin:
        http = stateless_client(app)
        # Its requests on the event loop the app's lifespan runs on (the admin client's), as in a served app: the live
        # hub's wake-ups are asyncio events, which a request on a loop of its own would not reach until a timeout.
        http.portal = admin.portal
        team = create_team(app, admin, http, "matrix")
        outsider = create_member(app, admin, "matrix-outsider")
        create_project(http, outsider, "matrix-other")
        emails = {"viewer": (team.viewer.email, PASSWORD), "editor": (team.editor.email, PASSWORD),
                  "owner": (team.owner.email, PASSWORD), "outsider": (outsider.email, PASSWORD),
                  "admin": (ADMIN_EMAIL, ADMIN_PASSWORD)}
        browsers = {who: sign_in(app, *credentials) for who, credentials in emails.items()}

        dataset = upload_dataset(http, team.owner, team.project_id)
        run_a = launch_external(http, team.editor, team.project_id)["id"]
        log_points(http, team.editor, run_a)
        cancel(http, team.editor, run_a)
        write_run_outputs(settings, run_a)
        running_run = launch_external(http, team.editor, team.project_id)["id"]
        source_run = launch_queued(http, team.editor, team.project_id, dataset["id"])["id"]
        cancel(http, team.editor, source_run)
        link_a = create_share(http, team.owner, [run_a])["token"]
        invite_token = create_user(admin, password=None, prefix="invitee")["invite_url"].rsplit("/", 1)[1]
        yield World(app=app, admin=admin, http=http, team=team, browsers=browsers,
                    emails=emails, signin_email=create_user(admin, prefix="signs-in")["user"]["email"],
                    dataset_id=dataset["id"], run_a=run_a, running_run=running_run, source_run=source_run,
                    link_a=link_a, invite_token=invite_token)


def _outcome(response) -> str:
    if response.status_code in (401, 403):
        return str(response.status_code)
    if response.status_code == 404 and response.json()["error"]["code"] in NOT_MEMBER_CODES:
        return "404"
    return "ok"


def _call(world: World, method: str, row: Row, who: str):
    call = row.build(world, who)
    headers = world.credentials(who) if call.headers is None else call.headers
    if call.settings:
        changed = get_settings().model_copy(update=call.settings)
        world.app.dependency_overrides[get_settings] = lambda: changed
    try:
        return world.http.request(method, API + call.path, headers=headers, json=call.json, data=call.data,
                                  files=call.files)
    finally:
        if call.settings:
            del world.app.dependency_overrides[get_settings]


@pytest.mark.parametrize(("method", "path"), sorted(TABLE, key=lambda key: (key[1], key[0])),
                         ids=lambda part: part.removeprefix("/api/v1"))
def test_route_allows_and_denies_as_the_table_says(world, method, path):
    row = TABLE[(method, path)]
    wrong = []
    for who, expected in zip(COLUMNS, row.cells.split(), strict=True):
        response = _call(world, method, row, who)
        got = _outcome(response)
        if got != expected:
            wrong.append(f"{who}: expected {expected}, got {response.status_code} {response.text[:300]}")
        elif expected == "ok" and not (response.is_success or response.status_code == row.ok_status):
            wrong.append(f"{who}: allowed, but answered {response.status_code} {response.text[:300]}")
        elif expected != "ok":
            error_of(response, int(expected))
    assert not wrong, "\n".join(wrong)
