"""The run page's charts in Chromium: leaving for a comparison and coming back throws nothing; the legend shows
the logged latest value beside the smoothed one."""

import re

import pytest

from tests.e2e.conftest import screenshot
from tests.worker.conftest import launch, series, wait_finished


def test_run_page_to_compare_and_back_throws_no_chart_errors(page, api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    assert wait_finished(api, run["id"])["status"] == "succeeded"
    page.goto(f"/runs/{run['id']}")
    page.wait_for_selector('[data-testid="chart-train/loss"][data-points="2"]')
    logged = series(api, run["id"], "train/loss")["value"][-1]
    legend = page.locator('[data-testid="chart-train/loss"] .chart-legend-item')
    assert float(legend.locator('[data-testid="legend-value"]').text_content()) == pytest.approx(logged, rel=1e-3)
    smoothed = legend.locator('[data-testid="legend-smoothed"]').text_content()
    assert smoothed.startswith("smoothed ")
    # Two points under the default smoothing: the EMA differs from the last logged value, and both are shown.
    assert float(smoothed.removeprefix("smoothed ")) != pytest.approx(logged, rel=1e-3)
    screenshot(page, "run-page-two-steps")

    page.click('a:has-text("Compare…")')
    page.wait_for_url(re.compile(r"/compare\?runs="))
    page.wait_for_selector('[data-testid="chart-train/loss"][data-series="1"]')
    page.go_back()
    page.wait_for_url(re.compile(rf"/runs/{run['id']}$"))
    page.wait_for_selector('[data-testid="chart-train/loss"][data-points="2"]')
    # uPlot commits a plot's first draw in a microtask; let every queued commit and redraw run before judging.
    page.evaluate("() => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 200)))")
    assert not page.errors, f"uncaught errors after run page → Compare → Back: {page.errors}"
