"""The run table in Chromium: tag a run on its page, filter the table by the tag (kept in the URL across a reload),
export the filtered table as CSV, add the run to a comparison with the run picker, and delete a run after the
confirmation."""

import csv
import io
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from tests.e2e.conftest import screenshot


def _external_run(api, name: str, eval_loss: float) -> dict:
    response = api.post("/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True, "name": name,
                                       "params": {"r": 4}})
    assert response.status_code == 201, response.text
    run = response.json()
    points = [{"key": "eval/loss", "step": 1, "value": eval_loss}]
    assert api.post(f"/runs/{run['id']}/metrics", json={"points": points}).status_code == 200
    assert api.post(f"/runs/{run['id']}/cancel").status_code == 200
    return run


def test_tag_filter_export_and_pick_a_run(page, api):
    label = uuid.uuid4().hex[:8]
    tag = f"ui-{label}"
    tagged = _external_run(api, f"table-ui-{label}-tagged", 1.25)
    other = _external_run(api, f"table-ui-{label}-other", 2.5)

    # Tag the run on its page.
    page.goto(f"/runs/{tagged['id']}")
    page.click('[data-testid="edit-labels"]')
    page.fill('[data-testid="run-tags-input"]', f"{tag}, keep")
    page.fill('[data-testid="run-notes-input"]', "the one to beat")
    page.click('[data-testid="save-labels"]')
    page.wait_for_selector(f'[data-testid="run-labels"] [data-testid="run-tag"]:text-is("{tag}")')
    page.wait_for_selector('[data-testid="run-notes"]:text-is("the one to beat")')
    screenshot(page, "run-page-labels")

    # Filter the table by the tag; the URL keeps it across a reload.
    page.goto("/")
    page.wait_for_selector(f'[data-testid="run-row"][data-run-id="{other["id"]}"]')
    page.select_option('[data-testid="filter-kind"]', "tag")
    page.fill('[data-testid="filter-value"]', tag)
    page.click('[data-testid="filter-add"]')
    page.wait_for_selector(f'[data-testid="run-row"][data-run-id="{other["id"]}"]', state="detached")
    assert parse_qs(urlparse(page.url).query)["tag"] == [tag]
    page.reload()
    page.wait_for_selector(f'[data-testid="filter-chip"]:has-text("tag: {tag}")')
    row = page.wait_for_selector(f'[data-testid="run-row"][data-run-id="{tagged["id"]}"]')
    assert sorted(t.inner_text() for t in row.query_selector_all('[data-testid="run-tag"]')) == ["keep", tag]
    assert len(page.query_selector_all('[data-testid="run-row"]')) == 1
    screenshot(page, "runs-table-filtered")

    # Export what the filter shows.
    with page.expect_download() as info:
        page.click('[data-testid="export-csv"]')
    download = info.value
    assert download.suggested_filename == "runs.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [(int(r["id"]), r["name"], r["tags"], r["params.r"], float(r["best_eval_loss"])) for r in rows] == [
        (tagged["id"], tagged["name"], f"keep,{tag}", "4", 1.25)]

    # Add the tagged run to a comparison of the other one, found by its tag.
    page.goto(f"/compare?runs={other['id']}")
    page.fill('[data-testid="run-picker-search"]', tag)
    page.click(f'[data-testid="run-picker-result"] button[aria-label="Add {tagged["name"]}"]')
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('runs') === '{other['id']},{tagged['id']}'")
    page.wait_for_selector('[data-testid="run-picker-result"]', state="detached")

    # Delete the other run from its page: only once the confirmation is accepted.
    page.goto(f"/runs/{other['id']}")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click('[data-testid="delete-run"]')
    assert api.get(f"/runs/{other['id']}").status_code == 200
    page.once("dialog", lambda dialog: dialog.accept())
    page.click('[data-testid="delete-run"]')
    page.wait_for_url(lambda url: urlparse(url).path == "/")
    assert api.get(f"/runs/{other['id']}").status_code == 404
