"""Teams end to end in Chromium, on a fresh install: first admin → invite an editor → the editor launches and
shares a comparison → the link works for a stranger with no cookies, read-only and live → revoked, it shows so."""

import re

from playwright.sync_api import expect

from tests.e2e.conftest import close_page, open_page, screenshot, wait_for_points

ADMIN = {"email": "ada@lab.example", "display_name": "Ada", "password": "ada's long password"}
EDITOR = {"email": "grace@lab.example", "display_name": "Grace", "password": "grace's long password"}
LABELS = {"email": "Email", "display_name": "Display name", "password": "Password"}


def _launch_from_form(page, max_steps: int, learning_rate: float) -> int:
    page.goto("/runs/new")
    page.get_by_label("Method", exact=True).select_option("lora")
    page.get_by_label("Base model", exact=True).select_option("tunelab-tiny")
    datasets = page.get_by_label("Dataset", exact=True)
    sample = datasets.evaluate("select => [...select.options].find(o => o.text.includes('tiny-tasks'))?.value")
    assert sample, "the bundled sample dataset is offered"
    datasets.select_option(sample)
    page.get_by_label("Max steps", exact=True).fill(str(max_steps))
    page.get_by_label("Learning rate", exact=True).fill(str(learning_rate))
    page.get_by_role("button", name="Launch run").click()
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
            admin.get_by_label(LABELS[field], exact=True).fill(value)
        admin.get_by_role("button", name="Create admin account").click()
        # Signed in: the top bar's project switcher.
        expect(admin.get_by_label("Project", exact=True)).to_be_visible()

        admin.goto("/settings/project")
        invite = admin.get_by_role("region", name="Invite someone", exact=True)
        invite.get_by_label("Email", exact=True).fill(EDITOR["email"])
        invite.get_by_label("Display name", exact=True).fill(EDITOR["display_name"])
        invite.get_by_label("Role", exact=True).select_option("editor")
        invite.get_by_role("button", name="Create invitation").click()
        invite_link = invite.get_by_role("textbox", name="Invitation link").input_value()
        assert re.search(r"/invite/[\w-]+$", invite_link), invite_link
        expect(admin.get_by_role("row").filter(has=admin.get_by_role("cell", name=EDITOR["email"], exact=True))
               ).to_be_visible()

        editor = open_page(browser, fresh_stack)
        editor.goto(invite_link)
        editor.get_by_label("Display name", exact=True).fill(EDITOR["display_name"])
        editor.get_by_label("Password", exact=True).fill(EDITOR["password"])
        editor.get_by_role("button", name="Join Tunelab").click()
        expect(editor.get_by_label("Project", exact=True)).to_be_visible()

        # The second run is long enough to be still training when the stranger opens the link.
        first = _launch_from_form(editor, max_steps=40, learning_rate=0.005)
        second = _launch_from_form(editor, max_steps=3000, learning_rate=0.001)
        editor.goto(f"/compare?runs={first},{second}")
        wait_for_points(editor, "train/loss", lambda n: n > 40, "both runs on the compare chart")
        editor.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
        editor.get_by_role("button", name="Share", exact=True).click()
        dialog = editor.get_by_role("dialog", name="Share this comparison")
        dialog.get_by_role("button", name="Create link").click()
        share_url = dialog.get_by_role("textbox", name="Share link").input_value()
        assert re.search(r"/s/[\w-]{20,}$", share_url), share_url

        # A stranger: a new browser context, no cookies, never signed in.
        stranger = open_page(browser, fresh_stack)
        assert stranger.context.cookies() == []
        stranger.goto(share_url)
        banner = stranger.get_by_role("banner").filter(has_text="Shared view")
        expect(banner).to_be_visible()
        assert "read-only" in banner.text_content().lower() and EDITOR["email"] not in banner.text_content()
        stranger.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
        # Live: the curves grow while the second run trains, without a reload.
        stranger.evaluate("window.__sameDocument = true")
        early = wait_for_points(stranger, "train/loss", lambda n: n > 40, "the second run's first shared points")
        wait_for_points(stranger, "train/loss", lambda n: n > early, "the shared chart to grow live")
        assert stranger.evaluate("window.__sameDocument") is True
        for control in ("Cancel", "Clone", "Share", "Delete"):
            assert stranger.get_by_role("button", name=control).or_(stranger.get_by_role("link", name=control)
                                                                    ).count() == 0, control
        assert stranger.get_by_label("Project", exact=True).count() == 0
        screenshot(stranger, "shared-compare")

        # The editor revokes the link in the share dialog: the open page, still streaming, says so by itself,
        # and so does the same URL opened again.
        dialog.get_by_role("button", name="Revoke", exact=True).click()
        expect(dialog.get_by_text("No share links yet.")).to_be_visible()
        revoked = stranger.get_by_role("heading", name="Share link revoked")
        expect(revoked).to_be_visible()
        stranger.goto(share_url)
        expect(revoked).to_be_visible()
        assert stranger.get_by_role("region", name="Train loss", exact=True).count() == 0
    finally:
        for page, name in ((stranger, "teams-stranger"), (editor, "teams-editor"), (admin, "teams-admin")):
            if page is not None:
                close_page(page, name)
