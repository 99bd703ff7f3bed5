"""A study in Chromium, the issue's journey end to end: made from the form, trained by the worker, its page's
overlay, cost table and Pareto charts; the playground on the study page fills the base's and each method's column;
the page fits 800 px; shared, it opens read-only in a browser without cookies; a run of it is tagged, the runs
table filtered by the tag and exported as CSV."""

import csv
import io
import re
import uuid
from pathlib import Path

from tests.conftest import wait_while_progressing
from tests.e2e.conftest import close_page, open_page, screenshot
from tests.worker.conftest import FINISHED, run_progress

METHODS = ("lora", "ia3", "full")
STEPS = 4
PLAYGROUND_TOKENS = 6


def test_a_study_from_the_form_trains_compares_and_shares_read_only(page, api, api_server, browser, worker,
                                                                    start_worker, settings, sample_dataset):
    page.goto("/studies")
    page.click('[data-testid="new-study"]')
    page.wait_for_selector('[data-testid="study-form"]')
    page.fill('[name="name"]', "three methods")
    page.select_option('[name="model"]', "tunelab-tiny")
    page.select_option('[name="dataset_id"]', str(sample_dataset["id"]))
    page.click('[data-testid="launch-study"]')  # no method yet: refused at the field, nothing sent
    page.wait_for_selector('[data-testid="field-error-methods"]')
    for method in METHODS:
        page.check(f'[data-testid="study-methods"] input[value="{method}"]')
    page.fill('[name="budget.max_steps"]', str(STEPS))
    page.fill('[name="params.max_length"]', "64")
    page.fill('[name="params.eval_split"]', "5")  # out of bounds: the server's 422 shows at the field
    assert page.text_content('[data-testid="study-run-count"]').startswith("3 runs")
    page.click('[data-testid="launch-study"]')
    error = page.wait_for_selector('[data-testid="field-error-params.eval_split"]')
    assert "eval_split" in error.text_content()
    page.fill('[name="params.eval_split"]', "0.2")
    page.click('[data-testid="launch-study"]')
    page.wait_for_url(re.compile(r"/studies/\d+$"))
    study_id = int(page.url.rsplit("/", 1)[1])
    start_worker(settings.infer_queue)  # the playground's worker starts while the study trains

    detail = wait_while_progressing(
        lambda: api.get(f"/studies/{study_id}").json(), lambda d: all(r["status"] in FINISHED for r in d["runs"]),
        lambda d: tuple(run_progress(r) for r in d["runs"]), message="the study's three runs to finish")
    assert sorted(r["method"] for r in detail["runs"]) == sorted(METHODS)
    assert {r["status"] for r in detail["runs"]} == {"succeeded"}
    # The page follows the runs on its own and draws one line per run of each metric.
    page.wait_for_selector('[data-testid="study-runs"] [data-status="succeeded"] >> nth=2')
    page.wait_for_selector('[data-testid="chart-eval/loss"][data-series="3"]')
    page.wait_for_selector('[data-testid="chart-train/loss"][data-series="3"]')
    cells = page.eval_on_selector_all('[data-testid="study-cost-table"] tbody tr', "rows => rows.map(r => r.dataset.cell)")
    assert sorted(cells) == sorted(METHODS)
    assert page.locator('[data-testid="study-cost-table"] [data-best]').count() >= 1
    for chart in page.query_selector_all('[data-testid="pareto-chart"]'):
        assert chart.get_attribute("data-points") == "3"
        assert int(chart.get_attribute("data-frontier")) >= 1
    screenshot(page, "study")

    # The playground below the study: the base and the first seed of each method, side by side.
    panel = page.wait_for_selector('[data-testid="study-playground"] [data-testid="playground"]')
    assert page.locator('[data-testid="study-playground-runs"] input:checked').count() == len(METHODS)
    panel.query_selector('[data-testid="playground-prompt"]').fill("What is 2 plus 3?")
    panel.query_selector("#field-sampling\\.max_new_tokens").fill(str(PLAYGROUND_TOKENS))
    panel.query_selector("#field-sampling\\.ignore_eos").check()
    panel.query_selector('[data-testid="playground-generate"]').click()
    slots = range(len(METHODS) + 1)
    for slot in slots:
        page.wait_for_selector(f'[data-testid="playground-slot-{slot}"][data-status="done"]', timeout=180_000)
    labels = [h.inner_text() for h in page.query_selector_all('[data-testid="playground-columns"] h3')]
    assert labels[0] == "base: tunelab-tiny"
    assert sorted(labels[1:]) == sorted(f"run {r['id']}: {r['name']}" for r in detail["runs"])
    for slot in slots:
        assert page.inner_text(f'[data-testid="playground-completion-{slot}"]').strip(), f"slot {slot} is empty"

    # At 800 px the whole page, charts and playground columns included, fits without a horizontal scroll.
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_function("() => document.documentElement.scrollWidth <= 800", timeout=10_000)
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.click('[data-testid="study-share"]')
    url = page.input_value('[data-testid="study-share-url"]')
    assert "/s/" in url
    shared = open_page(browser, api_server)  # a fresh context: no session cookie
    try:
        shared.goto(url)
        shared.wait_for_selector(f'[data-testid="study-page"][data-study-id="{study_id}"]')
        shared.wait_for_selector('[data-testid="chart-eval/loss"][data-series="3"]')
        shared.wait_for_selector('[data-testid="study-cost-table"]')
        assert shared.locator('[data-testid="study-actions"]').count() == 0, "a shared study is read-only"
        assert shared.locator('[data-testid="study-runs"] a').count() == 0, "no links into the app"
    finally:
        close_page(shared, "shared-study")
    # A run of the study: tagged on its page, which links back to the study.
    tag = f"study-{uuid.uuid4().hex[:8]}"
    page.click('[data-testid="study-runs"] a >> nth=0')
    tagged_id = int(page.url.rsplit("/", 1)[1])
    page.click('[data-testid="edit-labels"]')
    page.fill('[data-testid="run-tags-input"]', tag)
    page.click('[data-testid="save-labels"]')
    page.wait_for_selector(f'[data-testid="run-labels"] [data-testid="run-tag"]:text-is("{tag}")')
    page.click('[data-testid="run-study-link"]')
    page.wait_for_selector(f'[data-testid="study-page"][data-study-id="{study_id}"]')

    # The runs table filtered by the tag holds that run alone, and exports it as CSV.
    page.goto("/")
    page.select_option('[data-testid="filter-kind"]', "tag")
    page.fill('[data-testid="filter-value"]', tag)
    page.click('[data-testid="filter-add"]')
    page.wait_for_selector(f'[data-testid="run-row"][data-run-id="{tagged_id}"]')
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"run-row\"]').length === 1")
    with page.expect_download() as info:
        page.click('[data-testid="export-csv"]')
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert [(int(r["id"]), r["tags"]) for r in rows] == [(tagged_id, tag)]
