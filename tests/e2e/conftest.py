"""Real Chromium (Debian's package, driven by Playwright; never a downloaded browser) against a real stack."""

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ADMIN_EMAIL, ADMIN_PASSWORD, IN_CI
from tests.worker.conftest import sample_dataset  # noqa: F401  (a fixture the UI tests use too)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ROOT / "docs" / "screenshots"
# `make screenshots` sets it: only that target rewrites the committed pictures; `make test` leaves them alone.
REFRESH_SCREENSHOTS = os.environ.get("TUNELAB_REFRESH_SCREENSHOTS") == "1"
PAGE_TIMEOUT_MS = 30_000
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium")
    if executable is None:
        if IN_CI:
            pytest.fail("chromium is required in CI (make test installs Debian's package)")
        pytest.skip("chromium not installed (Debian package chromium)")
    if not (ROOT / "frontend" / "dist" / "index.html").exists():
        pytest.fail("the web UI is not built: run `make frontend` (make test does)")
    from playwright.sync_api import expect, sync_playwright

    # An assertion waits as long as the page's own waits (5 s by default): the UI may lag a busy machine that long.
    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def open_page(browser, base_url: str):
    """A page in a fresh browser context (no cookies), collecting uncaught page errors."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    return page


def points_drawn(page, key: str) -> int:
    """How many points the chart of `key` draws (its data-points attribute); 0 while the chart is not there yet. Read
    without waiting: Playwright's get_attribute waits up to its 30 s default for the element, a fixed wait that failed
    the polling caller on a busy machine, where the caller itself waits as long as the run moves."""
    drawn = page.evaluate("(selector) => document.querySelector(selector)?.getAttribute('data-points') ?? null",
                          f'[data-testid="chart-{key}"]')
    return int(drawn or 0)


def wait_for_points(page, key: str, enough, message: str) -> int:
    """Until the chart of `key` draws `enough(n)` points; fails only when it stops growing (not on a slow machine)."""
    from tests.conftest import wait_while_progressing

    return wait_while_progressing(lambda: points_drawn(page, key), enough, lambda n: n, message=message)


def wait_for_completions(panel, count: int, message: str) -> list[str]:
    """The text of each of the playground's `count` columns (its model, its completion, its status line) once all of
    them have finished; fails at once when one fails, and otherwise only when no column has changed for the stall
    period: a model still loading on a busy machine is slow, not stuck. Read without waiting (evaluate_all): a
    Playwright read waits up to its 30 s default for its element, a fixed wait inside this poll."""
    from tests.conftest import wait_while_progressing

    columns = panel.get_by_role("region")

    def finished(texts: list[str]) -> bool:
        statuses = [text.strip().rsplit("\n", 1)[-1] for text in texts]
        failed = [status for status in statuses if status.startswith("Failed")]
        assert not failed, f"a playground column failed: {failed}"
        return len(texts) == count and all(re.match(r"\d+ tokens", status) for status in statuses)

    return wait_while_progressing(lambda: columns.evaluate_all("columns => columns.map(c => c.innerText)"),
                                  finished, tuple, message=message)


def run_row(page, name: str):
    """The runs table's row of the run named `name` (its name links to its page)."""
    return page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))


def edit_labels(page, tags: str, notes: str | None = None) -> None:
    """Tag (and annotate) the run whose page is open, with the form its labels button opens."""
    page.get_by_role("button", name=re.compile(r"^(Rename, tag, add notes|Edit name, tags, notes)$")).click()
    page.get_by_role("textbox", name=re.compile(r"^Tags")).fill(tags)
    if notes is not None:
        page.get_by_role("textbox", name="Notes", exact=True).fill(notes)
    page.get_by_role("button", name="Save", exact=True).click()


def tag_shown(page, tag: str):
    """The tag among the run page's tags (a list named Tags)."""
    return page.get_by_role("list", name="Tags").get_by_role("listitem").filter(has_text=re.compile(
        rf"^{re.escape(tag)}$"))


def filter_by_tag(page, tag: str) -> None:
    """Filter the runs table by a tag, as its filter bar adds a condition."""
    page.get_by_label("Filter by", exact=True).select_option("tag")
    page.get_by_label("Filter value", exact=True).fill(tag)
    page.get_by_role("button", name="Add filter").click()


def screenshot(page, name: str) -> None:
    """A picture of the page for the README (docs/screenshots, with `make screenshots`), else a test artifact."""
    folder = SCREENSHOTS if REFRESH_SCREENSHOTS else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def close_page(page, name: str) -> None:
    """Keep a screenshot of the last state as a test artifact; fail on uncaught errors in the page."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    page.context.close()
    assert not page.errors, f"uncaught errors in the page: {page.errors}"


@pytest.fixture
def page(browser, api_server, admin_token, request):
    """A browser signed in as the session's admin (a real sign-in: the context keeps the session cookies)."""
    page = open_page(browser, api_server)
    response = page.context.request.post(f"{api_server}/api/v1/auth/sign-in",
                                         data={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    yield page
    close_page(page, request.node.name)
