"""A study in Chromium, the issue's journey end to end: made from the form, trained by the worker, its page's
overlay, cost table and Pareto charts; the playground on the study page fills the base's and each method's column;
the page fits 800 px; shared, it opens read-only in a browser without cookies; a run of it is tagged, the runs
table filtered by the tag and exported as CSV."""

import csv
import io
import re
import uuid
from pathlib import Path

from playwright.sync_api import expect

from tests.conftest import SESSION_TAG, wait_while_progressing
from tests.e2e.conftest import (
    close_page,
    edit_labels,
    filter_by_tag,
    open_page,
    run_row,
    screenshot,
    tag_shown,
    wait_for_completions,
)
from tests.worker.conftest import FINISHED, run_progress, series

METHODS = ("lora", "ia3", "full")
# The form's checkbox of each method, labelled by the registry's title.
METHOD_TITLES = {"lora": "LoRA", "ia3": "IA3", "full": "Full fine-tuning"}
BASELINE = "base model tunelab-tiny (no training)"  # the cost table's row of the untrained base model
BEST = re.compile(r"\bbest$")  # a cost table's cell marked best beyond the noise
STEPS = 4
PLAYGROUND_TOKENS = 6
# Long enough that the third run is still training when the test cancels it after its step-0 eval.
UNFINISHED_STUDY_STEPS = 40


def test_a_study_from_the_form_trains_compares_and_shares_read_only(page, api, api_server, browser, worker,
                                                                    start_worker, settings, sample_dataset):
    page.goto("/studies")
    page.get_by_role("link", name="New study").click()
    page.get_by_label("Study name", exact=True).fill("three methods")
    page.get_by_label("Base model", exact=True).select_option("tunelab-tiny")
    page.get_by_label("Dataset", exact=True).select_option(str(sample_dataset["id"]))
    launch = page.get_by_role("button", name=re.compile(r"^Launch \d+ runs?$"))
    launch.click()  # no method yet: refused at the field, nothing sent
    methods = page.get_by_role("group", name="Methods", exact=True)
    expect(methods).to_contain_text("Pick at least one method")
    for method in METHODS:
        methods.get_by_label(METHOD_TITLES[method], exact=True).check()
    page.get_by_label("Steps per run", exact=True).fill(str(STEPS))
    page.get_by_label("Max length (tokens)", exact=True).fill("64")
    eval_split = page.get_by_label("Eval split", exact=True)
    eval_split.fill("5")  # out of bounds: the server's 422 shows at the field
    expect(launch).to_have_text("Launch 3 runs")  # the button counts the runs it launches
    launch.click()
    expect(eval_split).to_have_accessible_description(re.compile("eval_split"))
    expect(eval_split).to_have_attribute("aria-invalid", "true")
    eval_split.fill("0.2")
    launch.click()
    page.wait_for_url(re.compile(r"/studies/\d+$"))
    study_id = int(page.url.rsplit("/", 1)[1])
    start_worker(settings.infer_queue)  # the playground's worker starts while the study trains

    detail = wait_while_progressing(
        lambda: api.get(f"/studies/{study_id}").json(), lambda d: all(r["status"] in FINISHED for r in d["runs"]),
        lambda d: tuple(run_progress(r) for r in d["runs"]), message="the study's three runs to finish")
    assert sorted(r["method"] for r in detail["runs"]) == sorted(METHODS)
    assert {r["status"] for r in detail["runs"]} == {"succeeded"}
    # The page follows the runs on its own and draws one line per run of each metric.
    study_runs = page.get_by_role("region", name="Runs", exact=True)
    expect(study_runs.get_by_text("succeeded", exact=True)).to_have_count(len(METHODS))
    page.wait_for_selector('[data-testid="chart-eval/loss"][data-series="3"]')
    page.wait_for_selector('[data-testid="chart-train/loss"][data-series="3"]')
    cost = page.get_by_role("table", name="Cost table", exact=True)
    assert sorted(_cells(cost)) == sorted(METHODS)
    assert cost.get_by_role("cell").filter(has_text=BEST).count() >= 1
    for chart in page.query_selector_all('[data-testid="pareto-chart"]'):
        assert chart.get_attribute("data-points") == "3"
        assert int(chart.get_attribute("data-frontier")) >= 1
    # Evaluation by generation: each method's answers scored, beside the untrained base model's row, and a Pareto
    # chart whose quality axis is higher-is-better.
    expect(cost.get_by_role("rowheader", name=BASELINE, exact=True)).to_be_visible()
    headers = cost.get_by_role("columnheader").all_text_contents()
    assert any(header.startswith("ROUGE-L") for header in headers), headers
    assert page.get_by_role("img", name=re.compile(r"\(higher is better\)")).count() == 1
    screenshot(page, "study")
    # The same runs as parallel coordinates and a param-vs-metric scatter: a line per run.
    page.goto(f"/analysis?runs={','.join(str(run['id']) for run in detail['runs'])}")
    expect(page.get_by_role("img", name=re.compile(r"^Parameters and results of the runs: 3 runs across"))
           ).to_be_visible()
    screenshot(page, "analysis")
    page.goto(f"/studies/{study_id}")

    # The playground below the study: the base and the first seed of each method, side by side.
    panel = page.get_by_role("region", name="Playground", exact=True)
    expect(panel).to_be_visible()
    in_playground = page.get_by_role("group", name=re.compile(r"^Runs in the playground"))
    assert in_playground.get_by_role("checkbox", checked=True).count() == len(METHODS)
    panel.get_by_role("textbox", name="Prompt").fill("What is 2 plus 3?")
    panel.get_by_label("Max new tokens").fill(str(PLAYGROUND_TOKENS))
    panel.get_by_label("Past the end token").check()
    panel.get_by_role("button", name="Generate").click()
    columns = wait_for_completions(panel, len(METHODS) + 1, "the base model's and each method's completions")
    labels = panel.get_by_role("heading", level=3).all_inner_texts()
    assert labels[0] == "base: tunelab-tiny"
    assert sorted(labels[1:]) == sorted(f"run {r['id']}: {r['name']}" for r in detail["runs"])
    for text in columns:
        label, *completion, _status = text.strip().split("\n")
        assert "".join(completion).strip(), f"{label}: the completion is empty"

    # At 800 px the whole page, charts and playground columns included, fits without a horizontal scroll.
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_function("() => document.documentElement.scrollWidth <= 800", timeout=10_000)
    page.set_viewport_size({"width": 1400, "height": 1000})

    # The run's share dialog, for the study: titled after it, and the link's URL shown once.
    page.get_by_role("button", name="Share", exact=True).click()
    dialog = page.get_by_role("dialog", name="Share this study")
    with page.expect_response(lambda r: r.url.endswith(f"/api/v1/studies/{study_id}/shares")
                              and r.request.method == "POST") as made:
        dialog.get_by_role("button", name="Create link").click()
    assert made.value.status == 201, made.value.text()
    url = dialog.get_by_role("textbox", name="Share link").input_value()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    assert "/s/" in url
    study_name = detail["study"]["name"]
    shared = open_page(browser, api_server)  # a fresh context: no session cookie
    try:
        shared.goto(url)
        expect(shared.get_by_role("heading", name=study_name, exact=True, level=1)).to_be_visible()
        shared.wait_for_selector('[data-testid="chart-eval/loss"][data-series="3"]')
        expect(shared.get_by_role("table", name="Cost table", exact=True)).to_be_visible()
        for action in ("Share", "Clone", "Extend", "Delete"):
            assert shared.get_by_role("button", name=action).count() == 0, f"a shared study is read-only: {action}"
        assert shared.get_by_role("region", name="Runs", exact=True).get_by_role("link").count() == 0, \
            "no links into the app"
    finally:
        close_page(shared, "shared-study")
    # A run of the study: tagged on its page, which links back to the study.
    tag = f"study-{uuid.uuid4().hex[:8]}"
    study_runs.get_by_role("link").first.click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    tagged_id = int(page.url.rsplit("/", 1)[1])
    # Its page shows the generation scores, tuned beside base, and the predictions they are computed from.
    generation = page.get_by_role("region", name="Evaluation by generation", exact=True)
    expect(generation.get_by_role("table", name="Scores", exact=True)).to_be_visible()
    predictions = generation.get_by_role("table", name="Predictions", exact=True)
    expect(predictions.get_by_role("row").filter(has=page.get_by_role("cell")).first).to_be_visible()
    edit_labels(page, tag)
    expect(tag_shown(page, tag)).to_be_visible()
    page.get_by_role("link", name=f"in study #{study_id}", exact=True).click()
    page.wait_for_url(re.compile(rf"/studies/{study_id}$"))
    expect(page.get_by_role("heading", name=study_name, exact=True, level=1)).to_be_visible()

    # The runs table filtered by the tag holds that run alone, and exports it as CSV.
    page.goto("/")
    filter_by_tag(page, tag)
    tagged = api.get(f"/runs/{tagged_id}").json()
    row = run_row(page, tagged["name"])
    expect(row).to_be_visible()
    expect(page.get_by_role("row").filter(has=page.get_by_role("cell"))).to_have_count(1)
    # The row names the run's study and seed in full, and links back to the study.
    study_link = row.get_by_role("link", name=re.compile(rf"^study #{study_id} · seed "))
    assert study_link.get_attribute("href") == f"/studies/{study_id}"
    assert study_link.inner_text().startswith(f"study #{study_id} · seed ")
    with page.expect_download() as info:
        page.get_by_role("link", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert [(int(r["id"]), r["tags"]) for r in rows] == [(tagged_id, tag)]


def _cells(table) -> list[str]:
    """The cells (rows) a cost table ranks, by their row headers; the base model's row is not one of them."""
    return [name for name in table.get_by_role("rowheader").all_inner_texts() if name != BASELINE]


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
    cost = page.get_by_role("table", name="Cost table", exact=True)
    expect(cost).to_be_visible()
    for row in table["rows"]:
        # A cell's row is headed by its name; its first cell is the Runs column.
        cell = cost.get_by_role("row").filter(has=page.get_by_role("rowheader", name=row["cell"], exact=True))
        finished = [run_id for run_id in row["run_ids"] if run_id in succeeded]
        assert sorted(row["finished_run_ids"]) == sorted(finished)
        runs_text = cell.get_by_role("cell").first.inner_text()
        if len(finished) < len(row["run_ids"]):
            assert f"{len(finished)} of {len(row['run_ids'])} finished" in runs_text, runs_text
            for run_id in set(row["run_ids"]) - succeeded:
                assert f"run {run_id}: canceled" in runs_text, runs_text
        if not finished:
            assert cell.get_by_role("cell").filter(has_text=BEST).count() == 0, "a cell of unfinished runs is never best"
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
    expect(page.get_by_role("img", name=re.compile(
        rf"^Parameters and results of the runs: {len(succeeded)} runs across"))).to_be_visible()
    not_drawn = page.get_by_role("list", name=re.compile(r"^Not drawn")).inner_text()
    for run_id in set(final) - succeeded:
        assert f"run {run_id}" in not_drawn, not_drawn
