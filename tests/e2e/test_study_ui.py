"""A study in Chromium, the issue's journey end to end: made from the form, trained by the worker, its page's
overlay, cost table and Pareto charts; the playground on the study page fills the base's and each method's column;
the page fits 800 px; shared, it opens read-only in a browser without cookies; a run of it is tagged, the runs
table filtered by the tag and exported as CSV."""

import csv
import io
import re
import uuid
from pathlib import Path

from tests.conftest import SESSION_TAG, wait_while_progressing
from tests.e2e.conftest import close_page, open_page, screenshot
from tests.worker.conftest import FINISHED, run_progress, series

METHODS = ("lora", "ia3", "full")
STEPS = 4
PLAYGROUND_TOKENS = 6
# Long enough that the third run is still training when the test cancels it after its step-0 eval.
UNFINISHED_STUDY_STEPS = 40


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
    cells = page.eval_on_selector_all('[data-testid="study-cost-table"] tbody tr[data-cell]', "rows => rows.map(r => r.dataset.cell)")
    assert sorted(cells) == sorted(METHODS)
    assert page.locator('[data-testid="study-cost-table"] [data-best]').count() >= 1
    for chart in page.query_selector_all('[data-testid="pareto-chart"]'):
        assert chart.get_attribute("data-points") == "3"
        assert int(chart.get_attribute("data-frontier")) >= 1
    # Evaluation by generation: each method's answers scored, beside the untrained base model's row, and a Pareto
    # chart whose quality axis is higher-is-better.
    page.wait_for_selector('[data-testid="study-cost-table"] [data-testid="baseline-row"]')
    headers = page.eval_on_selector_all('[data-testid="study-cost-table"] thead th', "ths => ths.map(t => t.textContent)")
    assert any(header.startswith("ROUGE-L") for header in headers), headers
    assert page.locator('[data-testid="pareto-chart"][data-better="higher"]').count() == 1
    screenshot(page, "study")
    # The same runs as parallel coordinates and a param-vs-metric scatter: a line per run.
    page.goto(f"/analysis?runs={','.join(str(run['id']) for run in detail['runs'])}")
    page.wait_for_selector('[data-testid="parallel-coordinates"][data-lines="3"]')
    screenshot(page, "analysis")
    page.goto(f"/studies/{study_id}")

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

    # The run's share dialog, for the study: titled after it, and the link's URL shown once.
    page.click('[data-testid="study-share"]')
    page.wait_for_selector('[data-testid="share-dialog"]:has-text("Share this study")')
    with page.expect_response(lambda r: r.url.endswith(f"/api/v1/studies/{study_id}/shares")
                              and r.request.method == "POST") as made:
        page.click('[data-testid="share-dialog"] button:has-text("Create link")')
    assert made.value.status == 201, made.value.text()
    url = page.input_value('[data-testid="share-created"] [data-testid="share-url"]')
    page.click('[data-testid="share-dialog"] [aria-label="Close"]')
    page.wait_for_selector('[data-testid="share-dialog"]', state="detached")
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
    # Its page shows the generation scores, tuned beside base, and the predictions they are computed from.
    page.wait_for_selector('[data-testid="generation-card"] [data-testid="generation-scores"]')
    page.wait_for_selector('[data-testid="predictions-table"] [data-testid="prediction-row"]')
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
    # The row names the run's study and seed in full, and links back to the study.
    study_link = page.locator(f'[data-testid="run-row"][data-run-id="{tagged_id}"] [data-testid="run-study"]')
    assert study_link.get_attribute("href") == f"/studies/{study_id}"
    assert study_link.inner_text().startswith(f"study #{study_id} · seed ")
    with page.expect_download() as info:
        page.click('[data-testid="export-csv"]')
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert [(int(r["id"]), r["tags"]) for r in rows] == [(tagged_id, tag)]


def test_a_study_ranks_and_averages_only_the_runs_that_finished(page, api, start_worker, sample_dataset):
    """Two methods × two seeds on a queue of its own: the first two runs succeed, the third is canceled once it has
    logged its untrained step-0 eval loss, the fourth is canceled while queued. The unfinished runs get no best, no
    Pareto point and no place in a mean; the table says how many of each cell's runs finished."""
    queue = f"study-{SESSION_TAG}"  # no worker consumes it until this test starts one
    created = api.post("/studies", json={
        "name": "unfinished seeds", "model": "tunelab-tiny", "dataset_id": sample_dataset["id"],
        "methods": ["lora", "ia3"], "seeds": [1, 2], "budget": {"max_steps": UNFINISHED_STUDY_STEPS}, "queue": queue,
        "params": {"max_length": 64, "eval_split": 0.2, "eval_steps": UNFINISHED_STUDY_STEPS}})
    assert created.status_code == 201, created.text
    study_id = created.json()["study"]["id"]
    runs = sorted(created.json()["runs"], key=lambda run: run["queue_position"])
    assert len(runs) == 4
    *to_train, never_started = runs
    assert api.post(f"/runs/{never_started['id']}/cancel").status_code == 200
    start_worker(queue)

    def state() -> dict[int, dict]:
        return {run["id"]: run for run in api.get(f"/studies/{study_id}").json()["runs"]}

    cut_short = to_train[2]["id"]

    def third_run_evaluated(runs: dict[int, dict]) -> bool:
        assert runs[cut_short]["status"] in ("queued", "running"), f"run {cut_short} ended before it was canceled"
        return (all(runs[r["id"]]["status"] == "succeeded" for r in to_train[:2])
                and runs[cut_short]["status"] == "running" and runs[cut_short]["metric_seq"] > 0
                and series(api, cut_short, "eval/loss")["step"][:1] == [0])

    wait_while_progressing(
        state, third_run_evaluated,
        lambda runs: tuple(run_progress(run) for run in runs.values()), message="two runs to finish, a third to start")
    assert api.post(f"/runs/{cut_short}/cancel").status_code == 200
    final = wait_while_progressing(state, lambda runs: all(run["status"] in FINISHED for run in runs.values()),
                                   lambda runs: tuple(run_progress(run) for run in runs.values()),
                                   message="the third run to stop")
    succeeded = {run_id for run_id, run in final.items() if run["status"] == "succeeded"}
    assert len(succeeded) == 2 and final[cut_short]["status"] == "canceled", final

    table = api.get(f"/studies/{study_id}").json()["cost_table"]
    finished_cells = [row["cell"] for row in table["rows"] if row["finished_run_ids"]]
    page.goto(f"/studies/{study_id}")
    page.wait_for_selector('[data-testid="study-cost-table"]')
    for row in table["rows"]:
        cell = page.locator(f'[data-testid="study-cost-table"] tr[data-cell="{row["cell"]}"]')
        finished = [run_id for run_id in row["run_ids"] if run_id in succeeded]
        assert sorted(row["finished_run_ids"]) == sorted(finished)
        runs_text = cell.locator('[data-testid="cell-runs"]').inner_text()
        if len(finished) < len(row["run_ids"]):
            assert f"{len(finished)} of {len(row['run_ids'])} finished" in runs_text, runs_text
            for run_id in set(row["run_ids"]) - succeeded:
                assert f"run {run_id}: canceled" in runs_text, runs_text
        if not finished:
            assert cell.locator("[data-best]").count() == 0, "a cell of unfinished runs is never best"
            assert row["values"]["best_eval_loss"] is None
        else:  # the mean is over the finished runs alone
            assert row["values"]["best_eval_loss"]["n"] == len(finished)
    for chart in page.query_selector_all('[data-testid="pareto-chart"]'):
        assert chart.get_attribute("data-points") == str(len(finished_cells)), chart.get_attribute("data-points")
    # A cell whose seeds did not all finish is averaged over those that did, and its legend says so.
    cells_of_two = [row for row in table["rows"] if len(row["finished_run_ids"]) == 1 and len(row["run_ids"]) == 2]
    for row in cells_of_two:
        label = f"{row['cell']} · mean of 1 of 2 seeds"
        page.locator('[data-testid="chart-eval/loss"] .chart-legend-item', has_text=label).first.wait_for(
            timeout=30_000)
    # Parameters and results: the succeeded runs are lines; the canceled ones are listed, not drawn.
    page.goto(f"/analysis?runs={','.join(str(run_id) for run_id in final)}")
    page.wait_for_selector(f'[data-testid="parallel-coordinates"][data-lines="{len(succeeded)}"]')
    not_drawn = page.inner_text('[data-testid="analysis-not-drawn"]')
    for run_id in set(final) - succeeded:
        assert f"run {run_id}" in not_drawn, not_drawn
