"""Real Chromium (Debian's package, driven by Playwright; never a downloaded browser) against a real stack."""

import shutil
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.worker.conftest import sample_dataset  # noqa: F401  (a fixture the UI tests use too)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ROOT / "docs" / "screenshots"
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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, api_server, request):
    """A fresh browser context on the real API; a screenshot of the last state is kept as a test artifact."""
    context = browser.new_context(base_url=api_server, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    console_errors: list[str] = []
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert not console_errors, f"uncaught errors in the page: {console_errors}"
