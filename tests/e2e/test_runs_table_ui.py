"""The run table in Chromium: tag a run on its page, filter the table by the tag (kept in the URL across a reload),
export the filtered table as CSV, add the run to a comparison with the run picker, and delete a run after the
confirmation."""

import csv
import io
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from tests.e2e.conftest import edit_labels, filter_by_tag, run_row, screenshot, tag_shown


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
    edit_labels(page, f"{tag}, keep", notes="the one to beat")
    expect(tag_shown(page, tag)).to_be_visible()
    expect(page.get_by_text("the one to beat", exact=True)).to_be_visible()
    screenshot(page, "run-page-labels")

    # Filter the table by the tag; the URL keeps it across a reload.
    page.goto("/")
    expect(run_row(page, other["name"])).to_be_visible()
    filter_by_tag(page, tag)
    expect(run_row(page, other["name"])).to_have_count(0)
    assert parse_qs(urlparse(page.url).query)["tag"] == [tag]
    page.reload()
    expect(page.get_by_role("button", name=f"Remove filter tag: {tag}", exact=True)).to_be_visible()
    row = run_row(page, tagged["name"])
    expect(row).to_be_visible()
    assert sorted(row.get_by_role("list", name="Tags").get_by_role("listitem").all_inner_texts()) == ["keep", tag]
    # Only the header row besides: a row of column headers, not of cells.
    assert page.get_by_role("row").filter(has=page.get_by_role("cell")).count() == 1
    screenshot(page, "runs-table-filtered")

    # Export what the filter shows.
    with page.expect_download() as info:
        page.get_by_role("link", name="Export CSV").click()
    download = info.value
    assert download.suggested_filename == "runs.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [(int(r["id"]), r["name"], r["tags"], r["params.r"], float(r["best_eval_loss"])) for r in rows] == [
        (tagged["id"], tagged["name"], f"keep,{tag}", "4", 1.25)]

    # Add the tagged run to a comparison of the other one, found by its tag.
    page.goto(f"/compare?runs={other['id']}")
    page.get_by_role("searchbox", name="Add runs to the comparison").fill(tag)
    page.get_by_role("list", name="Matching runs").get_by_role("button", name=f"Add {tagged['name']}",
                                                               exact=True).click()
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('runs') === '{other['id']},{tagged['id']}'")
    expect(page.get_by_role("list", name="Matching runs")).to_have_count(0)

    # Delete the other run from its page: only once the confirmation is accepted.
    page.goto(f"/runs/{other['id']}")
    delete = page.get_by_role("button", name="Delete", exact=True)
    page.once("dialog", lambda dialog: dialog.dismiss())
    delete.click()
    assert api.get(f"/runs/{other['id']}").status_code == 200
    page.once("dialog", lambda dialog: dialog.accept())
    delete.click()
    page.wait_for_url(lambda url: urlparse(url).path == "/")
    assert api.get(f"/runs/{other['id']}").status_code == 404
