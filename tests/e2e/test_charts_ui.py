"""The run page's charts in Chromium: the legend shows the logged latest value beside the smoothed one; a drag zooms
every chart of the page on x and a double-click resets them; a chart exports its data as CSV and its picture as PNG;
the system metrics open in their own section; leaving for a comparison and coming back throws nothing."""

import csv
import io
import re

import pytest

from tests.e2e.conftest import ARTIFACTS, screenshot
from tests.worker.conftest import launch, series, wait_finished


def x_range(page, key: str) -> tuple[float, float]:
    """The x range the chart of `key` shows (its data-x-range attribute)."""
    low, high = page.get_attribute(f'[data-testid="chart-{key}"]', "data-x-range").split(",")
    return float(low), float(high)


def drag_across(page, key: str, start: float, end: float) -> None:
    """Drag over the chart of `key` from `start` to `end`, as fractions of its plot area's width."""
    box = page.locator(f'[data-testid="chart-{key}"] .u-over').bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * end, y, steps=8)
    page.mouse.up()


def download(page, card, button: str):
    with page.expect_download() as info:
        card.get_by_role("button", name=button, exact=True).click()
    return info.value


def test_run_page_charts_zoom_together_export_and_survive_compare_and_back(page, api, worker, sample_dataset):
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

    # A drag on the train loss zooms every chart to the same steps; a double-click on another resets them all to
    # their own data (eval/loss starts at step 0, train/loss at step 1).
    page.wait_for_selector('[data-testid="chart-eval/loss"][data-points="2"]')
    full_train, full_eval = x_range(page, "train/loss"), x_range(page, "eval/loss")
    assert full_train == (1, 2) and full_eval == (0, 2)
    drag_across(page, "train/loss", 0.25, 0.75)
    zoomed = x_range(page, "train/loss")
    assert 1.1 < zoomed[0] < zoomed[1] < 1.9
    for key in ("eval/loss", "train/learning_rate", "train/grad_norm"):
        assert x_range(page, key) == pytest.approx(zoomed), key
    page.dblclick('[data-testid="chart-eval/loss"] .u-over')
    assert x_range(page, "train/loss") == full_train and x_range(page, "eval/loss") == full_eval

    # Each chart card exports the chart's series (step and the raw logged values) and its picture.
    card = page.get_by_role("region", name="Train loss", exact=True)
    exported = download(page, card, "CSV")
    assert exported.suggested_filename == "train-loss.csv"
    rows = list(csv.reader(io.StringIO(open(exported.path(), encoding="utf-8").read())))
    logged = series(api, run["id"], "train/loss")
    assert rows[0] == ["step", run["name"]]
    assert [int(row[0]) for row in rows[1:]] == logged["step"] == [1, 2]
    assert [float(row[1]) for row in rows[1:]] == pytest.approx(logged["value"], rel=1e-9)
    picture = download(page, card, "PNG")
    assert picture.suggested_filename == "train-loss.png"
    assert open(picture.path(), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    ARTIFACTS.mkdir(exist_ok=True)
    picture.save_as(ARTIFACTS / "chart-export-train-loss.png")

    # The worker's CPU and memory samples are charted in a collapsed System section, not among the training charts.
    system = page.get_by_role("group", name="System", exact=True)
    system_charts = '[data-testid^="chart-system/"]'
    assert page.locator(system_charts).count() == system.locator(system_charts).count() > 0
    rss_chart = page.locator('[data-testid="chart-system/rss_bytes"]')
    assert not rss_chart.is_visible()
    system.get_by_text("System", exact=True).click()  # its summary opens it
    assert rss_chart.get_attribute("data-points") == "2" and rss_chart.is_visible()
    assert rss_chart.locator("canvas").bounding_box()["width"] > 200
    system.screenshot(path=str(ARTIFACTS / "run-page-system-section.png"))

    page.get_by_role("link", name="Compare…").click()
    page.wait_for_url(re.compile(r"/compare\?runs="))
    page.wait_for_selector('[data-testid="chart-train/loss"][data-series="1"]')
    page.go_back()
    page.wait_for_url(re.compile(rf"/runs/{run['id']}$"))
    page.wait_for_selector('[data-testid="chart-train/loss"][data-points="2"]')
    # uPlot commits a plot's first draw in a microtask; let every queued commit and redraw run before judging.
    page.evaluate("() => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 200)))")
    assert not page.errors, f"uncaught errors after run page → Compare → Back: {page.errors}"
