"""People and projects for the authorization tests, made through the API as an admin and its users would.

The session database is shared by every test, so every email, project name and dataset here is unique.
"""

import json
import uuid
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy

import pytest
from fastapi.testclient import TestClient

from tunelab.core.security import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, SHARE_HEADER

API = "/api/v1"
PASSWORD = "a team member's password"
EXTERNAL_RUN = {"method": "lora", "model": "tunelab-tiny", "external": True}
# Runs that must stay queued go to a queue no worker of the test session consumes.
IDLE_QUEUE = "nobody-listens"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_email(prefix: str = "user") -> str:
    return f"{unique(prefix)}@teams.tunelab.test"


def error_of(response, status: int, code: str | None = None) -> dict:
    """The body's error, after checking the status and the one error shape (and the code, when given)."""
    assert response.status_code == status, f"{response.status_code} {response.text}"
    body = response.json()
    assert list(body) == ["error"] and set(body["error"]) == {"code", "message", "details"}, body
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def share_header(token: str) -> dict[str, str]:
    return {SHARE_HEADER: token}


def stateless_client(app, **kwargs) -> TestClient:
    """A client that keeps no cookies: each request carries exactly the credentials given with it."""
    client = TestClient(app, **kwargs)
    client.cookies.jar.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    return client


@dataclass(frozen=True)
class BrowserSession:
    """A signed-in browser's two cookies."""

    token: str
    csrf: str

    @property
    def cookie(self) -> dict[str, str]:
        """The cookies alone, as a request forged by another site would carry them."""
        return {"Cookie": f"{SESSION_COOKIE}={self.token}; {CSRF_COOKIE}={self.csrf}"}

    @property
    def headers(self) -> dict[str, str]:
        """The cookies, and the CSRF cookie echoed in its header as Tunelab's own page does."""
        return {**self.cookie, CSRF_HEADER: self.csrf}


def sign_in(app, email: str, password: str = PASSWORD) -> BrowserSession:
    response = stateless_client(app).post(f"{API}/auth/sign-in", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return BrowserSession(response.cookies[SESSION_COOKIE], response.cookies[CSRF_COOKIE])


@dataclass(frozen=True)
class Member:
    user_id: int
    email: str
    token: str  # an API token of theirs

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)


def create_user(admin: TestClient, password: str | None = PASSWORD, prefix: str = "user") -> dict:
    """A user made by the admin: with a password, or (password=None) invited; the answer of POST /users."""
    body = {"email": new_email(prefix), "display_name": prefix}
    if password is not None:
        body["password"] = password
    response = admin.post(f"{API}/users", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def create_member(app, admin: TestClient, prefix: str = "member") -> Member:
    """A user with a password, signed in once to make an API token, as a person setting up a script would."""
    user = create_user(admin, prefix=prefix)["user"]
    browser = sign_in(app, user["email"])
    response = stateless_client(app).post(f"{API}/auth/tokens", json={"name": "tests"}, headers=browser.headers)
    assert response.status_code == 201, response.text
    return Member(user["id"], user["email"], response.json()["token"])


@dataclass(frozen=True)
class Team:
    """A project with one member per role."""

    project_id: int
    name: str
    owner: Member
    editor: Member
    viewer: Member


def create_project(http: TestClient, owner: Member, prefix: str = "project") -> tuple[int, str]:
    name = unique(prefix)
    response = http.post(f"{API}/projects", json={"name": name}, headers=owner.headers)
    assert response.status_code == 201, response.text
    return response.json()["id"], name


def add_member(http: TestClient, owner: Member, project_id: int, email: str, role: str) -> None:
    response = http.post(f"{API}/projects/{project_id}/members", json={"email": email, "role": role},
                         headers=owner.headers)
    assert response.status_code == 201, response.text


def create_team(app, admin: TestClient, http: TestClient, prefix: str = "team") -> Team:
    owner = create_member(app, admin, f"{prefix}-owner")
    project_id, name = create_project(http, owner, prefix)
    editor = create_member(app, admin, f"{prefix}-editor")
    viewer = create_member(app, admin, f"{prefix}-viewer")
    add_member(http, owner, project_id, editor.email, "editor")
    add_member(http, owner, project_id, viewer.email, "viewer")
    return Team(project_id, name, owner, editor, viewer)


def team_fixture(prefix: str):
    """A module's own team (set `team = team_fixture("...")` in the module), made once through the API."""

    @pytest.fixture(scope="module")
    def team(app, admin, http) -> Team:
        return create_team(app, admin, http, prefix)

    return team


def launch_external(http: TestClient, who: Member, project_id: int, name: str | None = None) -> dict:
    """A running run that never trains: it only logs metrics, and canceling it finishes it."""
    body = {**EXTERNAL_RUN, "project_id": project_id, "name": name or unique("external")}
    response = http.post(f"{API}/runs", json=body, headers=who.headers)
    assert response.status_code == 201, response.text
    return response.json()


def log_points(http: TestClient, who: Member, run_id: int, steps: int = 3) -> None:
    points = [{"key": "train/loss", "step": step, "value": 2.0 / (step + 1)} for step in range(1, steps + 1)]
    response = http.post(f"{API}/runs/{run_id}/metrics", json={"points": points}, headers=who.headers)
    assert response.status_code == 200, response.text


def cancel(http: TestClient, who: Member, run_id: int) -> dict:
    response = http.post(f"{API}/runs/{run_id}/cancel", headers=who.headers)
    assert response.status_code == 200, response.text
    return response.json()


def upload_dataset(http: TestClient, who: Member, project_id: int, rows: int = 3) -> dict:
    tag = uuid.uuid4().hex
    data = "".join(json.dumps({"instruction": f"Echo {tag}.", "input": str(i), "output": str(i)}) + "\n"
                   for i in range(rows)).encode()
    response = http.post(f"{API}/datasets", files={"file": (f"{tag}.jsonl", data, "application/jsonl")},
                         data={"project_id": str(project_id)}, headers=who.headers)
    assert response.status_code == 201, response.text
    return response.json()


def launch_queued(http: TestClient, who: Member, project_id: int, dataset_id: int) -> dict:
    """A real (not external) run that no worker picks up, so it has a dataset and a training config."""
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": dataset_id, "project_id": project_id,
            "queue": IDLE_QUEUE, "name": unique("queued")}
    response = http.post(f"{API}/runs", json=body, headers=who.headers)
    assert response.status_code == 201, response.text
    return response.json()


def create_share(http: TestClient, who: Member, run_ids: list[int], **options) -> dict:
    response = http.post(f"{API}/shares", json={"run_ids": run_ids, **options}, headers=who.headers)
    assert response.status_code == 201, response.text
    return response.json()


ARTIFACT_PATH = "adapter/adapter_config.json"
ARTIFACT_TEXT = '{"peft_type": "LORA", "r": 8}'
LOG_TEXT = "step 1: loss 2.0\n"


def write_run_outputs(settings, run_id: int) -> None:
    """An adapter file and a log in the run's folder, indexed as the worker indexes what training wrote."""
    from tunelab.db.session import session_scope
    from tunelab.services.runs.artifacts import RUN_LOG_NAME, index_run_artifacts, run_dir

    folder = run_dir(settings, run_id)
    (folder / ARTIFACT_PATH).parent.mkdir(parents=True, exist_ok=True)
    (folder / ARTIFACT_PATH).write_text(ARTIFACT_TEXT)
    (folder / RUN_LOG_NAME).write_text(LOG_TEXT)
    with session_scope() as session:
        index_run_artifacts(session, settings, run_id)
