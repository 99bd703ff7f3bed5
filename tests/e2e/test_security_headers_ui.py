"""The web UI in Chromium under the Content Security Policy it is served with (api/security_headers.py): the runs
page, a run page with its chart and its PNG export, and a shared page render and work with no violation."""

import uuid
from urllib.parse import urlparse

from tests.conftest import ADMIN_EMAIL, ADMIN_PASSWORD
from tests.e2e.conftest import close_page, open_page, wait_for_points

STEPS = 20
# Every violation the page meets, whatever the directive: the browser fires this event for each one it blocks.
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`));
"""


def _watched(page):
    """`page`, collecting CSP violations and console errors from its first script on."""
    page.console_errors = []
    page.on("console", lambda message: page.console_errors.append(message.text) if message.type == "error" else None)
    page.add_init_script(COLLECT_VIOLATIONS)
    return page


def _assert_clean(page) -> None:
    violations = page.evaluate("window.__cspViolations")
    assert violations == [], f"CSP violations: {violations}"
    assert page.console_errors == [], f"console errors: {page.console_errors}"


def _external_run_with_points(api) -> dict:
    created = api.post("/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True,
                                      "name": f"csp-{uuid.uuid4().hex[:8]}"})
    assert created.status_code == 201, created.text
    run = created.json()
    points = [{"key": "train/loss", "step": step, "value": 2.0 / step} for step in range(1, STEPS + 1)]
    assert api.post(f"/runs/{run['id']}/metrics", json={"points": points}).status_code == 200
    return run


def _export_png(page) -> None:
    """The chart's PNG export: a canvas drawn, encoded to a blob and saved through a blob: URL."""
    card = page.get_by_role("region", name="Train loss", exact=True)
    with page.expect_download() as download:
        card.get_by_role("button", name="PNG", exact=True).click()
    assert download.value.suggested_filename == "train-loss.png"


def test_the_ui_works_under_its_policy_on_the_runs_run_and_shared_pages(page, browser, api_server, api):
    run = _external_run_with_points(api)
    _watched(page)

    response = page.goto("/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    page.get_by_role("link", name=run["name"], exact=True).wait_for()
    _assert_clean(page)  # each page's document keeps its own list
    page.goto(f"/runs/{run['id']}")
    wait_for_points(page, "train/loss", lambda n: n == STEPS, "the run's chart")
    _export_png(page)
    _assert_clean(page)

    share = api.post("/shares", json={"run_ids": [run["id"]]})
    assert share.status_code == 201, share.text
    stranger = _watched(open_page(browser, api_server))
    try:
        response = stranger.goto(share.json()["url"])
        assert response.headers["referrer-policy"] == "no-referrer" and response.headers["x-frame-options"] == "DENY"
        wait_for_points(stranger, "train/loss", lambda n: n == STEPS, "the shared run's chart")
        _export_png(stranger)
        _assert_clean(stranger)
    finally:
        close_page(stranger, "shared-under-csp")


def test_signing_in_through_the_form_works_under_the_policy(browser, api_server, admin_token):
    """The sign-in form posts to a public route that refuses another site's Origin (login CSRF): the page's
    `Referrer-Policy: no-referrer` must not make the browser send `Origin: null` instead of its own."""
    page = _watched(open_page(browser, api_server))
    try:
        page.goto("/sign-in")
        page.get_by_label("Email", exact=True).fill(ADMIN_EMAIL)
        page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
        answers = []
        page.on("response", lambda response: answers.append(response.status)
                if response.url.endswith("/api/v1/auth/sign-in") else None)
        page.get_by_role("button", name="Sign in", exact=True).click()
        # Verifying the password takes a second or more on a busy machine; a refusal would leave the form shown.
        page.wait_for_url(lambda url: urlparse(url).path == "/" and url.startswith(api_server), timeout=120_000)
        assert answers == [200]
        _assert_clean(page)
    finally:
        close_page(page, "sign-in-under-csp")
