"""The web UI end to end in Chromium: launch from the form, watch it train live, clone, compare."""

import re

from tests.conftest import wait_for
from tests.e2e.conftest import SCREENSHOTS


def _points_drawn(page, key: str) -> int:
    return int(page.get_attribute(f'[data-testid="chart-{key}"]', "data-points") or 0)


def _wait_status(page, status: str, timeout_s: float = 240) -> None:
    page.wait_for_selector(f'[data-testid="status-badge"]:text-is("{status}")', timeout=timeout_s * 1000)


def _launch_from_form(page, sample_dataset: dict, **params) -> int:
    page.goto("/runs/new")
    page.select_option('[name="method"]', "lora")
    page.select_option('[name="model"]', "tunelab-tiny")
    page.select_option('[name="dataset"]', str(sample_dataset["id"]))
    for field, value in params.items():
        page.fill(f'[name="params.{field}"]', str(value))
    page.click('button:has-text("Launch run")')
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def test_launch_watch_clone_and_compare(page, api, worker, sample_dataset):
    first = _launch_from_form(page, sample_dataset, max_steps=150, eval_steps=25, learning_rate=0.005)
    _wait_status(page, "running", 120)
    page.evaluate("window.__sameDocument = true")
    page.wait_for_selector('[data-testid="chart-train/loss"]')
    early = wait_for(lambda: _points_drawn(page, "train/loss"), 60, 0.2, "the first points on the loss chart")
    later = wait_for(lambda: (n := _points_drawn(page, "train/loss")) > early and n, 120, 0.2,
                     "the loss chart to grow while the run trains")
    assert later > early
    _wait_status(page, "succeeded")
    assert page.evaluate("window.__sameDocument") is True, "the page updated live, without a reload"
    assert _points_drawn(page, "train/loss") == 150
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "run-page.png"), full_page=True)

    page.click('a:has-text("Clone"), button:has-text("Clone")')
    page.wait_for_url(re.compile(r"/runs/new\?clone=\d+"))
    page.wait_for_function("document.querySelector('[name=\"params.max_steps\"]')?.value === '150'")
    page.fill('[name="params.learning_rate"]', "0.002")
    page.click('button:has-text("Launch run")')
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    second = int(page.url.rsplit("/", 1)[1])
    assert second != first
    _wait_status(page, "succeeded")
    assert api.get(f"/runs/{second}").json()["config"]["params"]["learning_rate"] == 0.002

    page.goto("/")
    for run_id in (first, second):
        page.check(f'[data-testid="run-row"][data-run-id="{run_id}"] [data-testid="select-run"]')
    page.click('[data-testid="compare-selected"]')
    page.wait_for_url(re.compile(r"/compare\?runs="))
    chart = page.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
    assert int(chart.get_attribute("data-points")) >= 2 * 150
    page.wait_for_selector('[data-testid="config-table"]')
    assert page.is_checked('[data-testid="only-differences"]')
    differing = page.eval_on_selector_all('[data-testid="config-row"]', "rows => rows.map(r => r.dataset.field)")
    assert "params.learning_rate" in differing and "params.max_steps" not in differing
    cost_cells = page.eval_on_selector_all(
        '[data-testid="cost-table"] [data-metric="trainable_percent"]', "cells => cells.map(c => c.textContent)")
    assert len(cost_cells) == 2 and all(cell.strip() not in ("", "—") for cell in cost_cells)
    assert page.locator('[data-testid="cost-table"] .best').count() >= 1
    page.screenshot(path=str(SCREENSHOTS / "compare-page.png"), full_page=True)


def test_out_of_bounds_value_shows_the_api_error_at_the_field(page, sample_dataset):
    page.goto("/runs/new")
    page.select_option('[name="method"]', "lora")
    page.select_option('[name="dataset"]', str(sample_dataset["id"]))
    page.fill('[name="params.learning_rate"]', "5")
    page.click('button:has-text("Launch run")')
    error = page.wait_for_selector('[data-testid="field-error-params.learning_rate"]')
    assert "less than or equal to 1" in error.text_content()
    assert "/runs/new" in page.url


def test_deep_links_survive_a_reload(page, api):
    page.goto("/datasets")
    page.reload()
    page.wait_for_selector("text=tiny-tasks")
    page.goto("/no-such-page")
    page.wait_for_selector("text=This page does not exist")


def test_dataset_upload_shows_line_numbered_errors_then_accepts_a_good_file(page, tmp_path):
    bad = tmp_path / "bad-rows.jsonl"
    bad.write_text('{"instruction": "add 1 and 2", "output": "3"}\n{"instruction": "no answer"}\n{oops\n')
    page.goto("/datasets")
    page.set_input_files('[data-testid="dataset-file"]', str(bad))
    errors = page.wait_for_selector('[data-testid="upload-errors"]').text_content()
    assert "line 2" in errors and "output" in errors and "line 3" in errors
    assert page.locator('[data-testid="dataset-row"]:has-text("bad-rows")').count() == 0

    good = tmp_path / "good-rows.jsonl"
    good.write_text('{"instruction": "add 1 and 2", "output": "3"}\n{"instruction": "add 2 and 2", "output": "4"}\n')
    page.set_input_files('[data-testid="dataset-file"]', str(good))
    page.wait_for_selector('[data-testid="dataset-row"]:has-text("good-rows")')
