"""What every answer tells the browser (api/security_headers.py): a Content Security Policy, no framing, no Referer,
no content sniffing; on the UI and share pages (whose URL holds the share token), the API's answers and the API docs.
And a 405 says which methods the path has."""

import re

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from tests.api.teams_helpers import API, create_team, error_of, launch_external
from tests.conftest import wait_for
from tunelab.api.deps import get_db
from tunelab.core.settings import get_settings
from tunelab.main import create_app
from tunelab.services.accounts import principal_cache


def _directives(response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {name: value.strip() for name, _, value in
            (directive.strip().partition(" ") for directive in policy.split(";"))}


def _says_less(response) -> None:
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-content-type-options"] == "nosniff"


def _spa_asset(suffix: str) -> str:
    return "/assets/" + next(path.name for path in (get_settings().frontend_dir / "assets").glob(f"*{suffix}"))


@pytest.mark.parametrize("path", ["/", "/runs/7", "/s/a-share-token", "/invite/an-invitation", "index.js", "index.css"])
def test_ui_and_share_pages_send_a_strict_policy(http, path):
    if not (get_settings().frontend_dir / "index.html").is_file():
        pytest.skip("the web UI is not built (make frontend)")
    if not path.startswith("/"):
        path = _spa_asset(path.rsplit(".", 1)[1])

    response = http.get(path)

    assert response.status_code == 200
    _says_less(response)
    policy = _directives(response)
    assert policy["default-src"] == policy["script-src"] == policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == policy["base-uri"] == policy["object-src"] == "'none'"
    assert policy["img-src"] == "'self' data: blob:"  # a chart's PNG export


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/api/v1/health", 200),
    ("GET", "/api/v1/runs/1", 401),
    ("POST", "/api/v1/auth/sign-in", 422),
    ("GET", "/api/v1/no-such-route", 404),
])
def test_api_answers_send_them_too(http, method, path, status):
    response = http.request(method, path)

    assert response.status_code == status
    _says_less(response)
    assert _directives(response)["frame-ancestors"] == "'none'"


def test_the_api_docs_get_a_policy_that_lets_them_load(http):
    response = http.get("/api/docs")

    assert response.status_code == 200
    _says_less(response)
    policy = _directives(response)
    cdn_script = re.search(r'<script src="(https://[^/"]+)/', response.text)
    assert cdn_script and cdn_script[1] in policy["script-src"]
    assert policy["frame-ancestors"] == "'none'"


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("DELETE", "/api/v1/health", {"GET"}),
    ("PUT", "/api/v1/runs", {"GET", "POST"}),  # two routes
    ("POST", "/runs/7", {"GET"}),  # a page of the SPA
])
def test_a_405_says_which_methods_the_path_has(http, method, path, allowed):
    response = http.request(method, path)

    error_of(response, 405, "METHOD_NOT_ALLOWED")
    assert {name.strip() for name in response.headers["allow"].split(",")} == allowed


def test_the_metrics_fast_path_answers_with_nosniff_alone(app, admin, http, redis_url):
    """The ingest fast path answers by itself (api/ingest_fast_path.py): JSON that a script reads needs no policy for
    pages, and each header is bytes on every batch of a busy run."""
    wait_for(principal_cache.is_hearing, 30, 0.05, "the API hearing the invalidation channel (Redis)")
    team = create_team(app, admin, http, "headers")
    run_id = launch_external(http, team.editor, team.project_id)["id"]
    batch = {"points": [{"key": "train/loss", "step": 1, "value": 0.5}]}
    sessions_opened = []

    async def counted_db(request: Request):
        sessions_opened.append(request.url.path)
        async for session in get_db(request):
            yield session

    app.dependency_overrides[get_db] = counted_db
    try:
        through_route = http.post(f"{API}/runs/{run_id}/metrics", json=batch, headers=team.editor.headers)
        opened = len(sessions_opened)
        fast = http.post(f"{API}/runs/{run_id}/metrics", json=batch, headers=team.editor.headers)
    finally:
        del app.dependency_overrides[get_db]

    assert len(sessions_opened) == opened == 1, "the second batch took the fast path"
    assert through_route.status_code == fast.status_code == 200
    _says_less(through_route)
    assert fast.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in fast.headers and "x-frame-options" not in fast.headers


def test_an_unexpected_error_sends_them_too(migrated_db):
    """A 500 is answered by Starlette's outermost middleware; the headers are added outside it."""
    app = create_app()

    @app.post("/boom", include_in_schema=False)
    def boom() -> None:
        raise RuntimeError("boom")

    response = TestClient(app, raise_server_exceptions=False).post("/boom")

    error_of(response, 500, "INTERNAL_ERROR")
    _says_less(response)
    assert _directives(response)["frame-ancestors"] == "'none'"
