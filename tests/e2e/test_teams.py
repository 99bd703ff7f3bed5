"""Teams end to end in Chromium, on a fresh install: first admin → invite an editor → the editor launches and
shares a comparison → the link works for a stranger with no cookies, read-only and live → revoked, it shows so."""

import re

from tests.e2e.conftest import close_page, open_page, screenshot, wait_for_points

ADMIN = {"email": "ada@lab.example", "display_name": "Ada", "password": "ada's long password"}
EDITOR = {"email": "grace@lab.example", "display_name": "Grace", "password": "grace's long password"}


def _launch_from_form(page, max_steps: int, learning_rate: float) -> int:
    page.goto("/runs/new")
    page.select_option('[name="method"]', "lora")
    page.select_option('[name="model"]', "tunelab-tiny")
    sample = page.eval_on_selector(
        '[name="dataset"]', "select => [...select.options].find(o => o.text.includes('tiny-tasks'))?.value")
    assert sample, "the bundled sample dataset is offered"
    page.select_option('[name="dataset"]', sample)
    page.fill('[name="params.max_steps"]', str(max_steps))
    page.fill('[name="params.learning_rate"]', str(learning_rate))
    page.click('button:has-text("Launch run")')
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    return int(page.url.rsplit("/", 1)[1])


def test_first_admin_invites_an_editor_who_shares_a_comparison_then_revokes_it(browser, fresh_stack):
    admin = open_page(browser, fresh_stack)
    editor = stranger = None
    try:
        # A fresh install sends its first visitor to create the admin account.
        admin.goto("/")
        admin.wait_for_url(re.compile(r"/setup"))
        for field, value in ADMIN.items():
            admin.fill(f'[name="{field}"]', value)
        admin.click('button:has-text("Create admin account")')
        admin.wait_for_selector('[data-testid="project-switcher"]')

        admin.goto("/settings/project")
        admin.fill('[name="invite_email"]', EDITOR["email"])
        admin.fill('[name="invite_display_name"]', EDITOR["display_name"])
        admin.select_option('[name="invite_role"]', "editor")
        admin.click('button:has-text("Create invitation")')
        invite_link = admin.wait_for_selector('[data-testid="invite-link"]').input_value()
        assert re.search(r"/invite/[\w-]+$", invite_link), invite_link
        admin.wait_for_selector(f'[data-testid="member-row"]:has-text("{EDITOR["email"]}")')

        editor = open_page(browser, fresh_stack)
        editor.goto(invite_link)
        editor.fill('[name="display_name"]', EDITOR["display_name"])
        editor.fill('[name="password"]', EDITOR["password"])
        editor.click('button:has-text("Join Tunelab")')
        editor.wait_for_selector('[data-testid="project-switcher"]')

        # The second run is long enough to be still training when the stranger opens the link.
        first = _launch_from_form(editor, max_steps=40, learning_rate=0.005)
        second = _launch_from_form(editor, max_steps=3000, learning_rate=0.001)
        editor.goto(f"/compare?runs={first},{second}")
        wait_for_points(editor, "train/loss", lambda n: n > 40, "both runs on the compare chart")
        editor.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
        editor.click('[data-testid="share-button"]')
        dialog = editor.wait_for_selector('[data-testid="share-dialog"]')
        dialog.wait_for_selector('button:has-text("Create link")').click()
        share_url = editor.wait_for_selector('[data-testid="share-url"]').input_value()
        assert re.search(r"/s/[\w-]{20,}$", share_url), share_url

        # A stranger: a new browser context, no cookies, never signed in.
        stranger = open_page(browser, fresh_stack)
        assert stranger.context.cookies() == []
        stranger.goto(share_url)
        banner = stranger.wait_for_selector('[data-testid="shared-banner"]').text_content()
        assert "read-only" in banner.lower() and EDITOR["email"] not in banner
        stranger.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
        # Live: the curves grow while the second run trains, without a reload.
        stranger.evaluate("window.__sameDocument = true")
        early = wait_for_points(stranger, "train/loss", lambda n: n > 40, "the second run's first shared points")
        wait_for_points(stranger, "train/loss", lambda n: n > early, "the shared chart to grow live")
        assert stranger.evaluate("window.__sameDocument") is True
        for control in ("Cancel", "Clone", "Share", "Delete"):
            assert stranger.locator(f'button:has-text("{control}"), a:has-text("{control}")').count() == 0, control
        assert stranger.locator('[data-testid="share-button"]').count() == 0
        assert stranger.locator('[data-testid="project-switcher"]').count() == 0
        screenshot(stranger, "shared-compare")

        # The editor revokes the link in the share dialog: the open page, still streaming, says so by itself,
        # and so does the same URL opened again.
        editor.click('[data-testid="share-dialog"] [data-testid="share-row"] button:has-text("Revoke")')
        editor.wait_for_selector('[data-testid="share-dialog"] [data-testid="share-row"]', state="detached")
        message = stranger.wait_for_selector('[data-testid="share-unavailable"]', timeout=30_000).text_content()
        assert "link revoked" in message.lower()
        stranger.goto(share_url)
        message = stranger.wait_for_selector('[data-testid="share-unavailable"]').text_content()
        assert "link revoked" in message.lower()
        assert stranger.locator('[data-testid="chart-train/loss"]').count() == 0
    finally:
        for page, name in ((stranger, "teams-stranger"), (editor, "teams-editor"), (admin, "teams-admin")):
            if page is not None:
                close_page(page, name)
