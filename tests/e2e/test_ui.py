"""The web UI end to end in Chromium: launch from the form, watch it train live, clone, compare."""

import re

from tests.conftest import wait_while_progressing
from tests.e2e.conftest import points_drawn, screenshot, wait_for_points
from tests.worker.conftest import run_progress

STEPS = 60


def _wait_status(page, api, run_id: int, status: str) -> None:
    """Until the page's badge says `status`; fails only when the run itself stops making progress (a busy machine
    trains slowly, and a fixed deadline would fail a run that is merely slow)."""
    badge = page.locator(f'[data-testid="status-badge"]:text-is("{status}")')
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(), lambda _: badge.count() > 0, run_progress,
                           message=f"the run page to show {status}")


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
    first = _launch_from_form(page, sample_dataset, max_steps=STEPS, eval_steps=20, learning_rate=0.005)
    _wait_status(page, api, first, "running")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_selector('[data-testid="chart-train/loss"]')
    drawn = []

    def chart_grew(run) -> bool:
        drawn.append(points_drawn(page, "train/loss"))
        return len(set(drawn) - {0}) >= 2 or run["status"] in ("succeeded", "failed", "canceled")

    wait_while_progressing(lambda: api.get(f"/runs/{first}").json(), chart_grew, run_progress,
                           message="the loss chart to grow while the run trains")
    assert len(set(drawn) - {0}) >= 2, f"the chart grew while the run trained: {sorted(set(drawn))}"
    _wait_status(page, api, first, "succeeded")
    assert page.evaluate("window.__sameDocument") is True, "the page updated live, without a reload"
    assert points_drawn(page, "train/loss") == STEPS
    screenshot(page, "run-page")

    page.click('a:has-text("Clone"), button:has-text("Clone")')
    page.wait_for_url(re.compile(r"/runs/new\?clone=\d+"))
    page.wait_for_function(f"() => document.querySelector('[name=\"params.max_steps\"]')?.value === '{STEPS}'")
    page.fill('[name="params.learning_rate"]', "0.002")
    page.click('button:has-text("Launch run")')
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    second = int(page.url.rsplit("/", 1)[1])
    assert second != first
    _wait_status(page, api, second, "succeeded")
    assert api.get(f"/runs/{second}").json()["config"]["params"]["learning_rate"] == 0.002

    page.goto("/")
    for run_id in (first, second):
        page.check(f'[data-testid="run-row"][data-run-id="{run_id}"] [data-testid="select-run"]')
    page.click('[data-testid="compare-selected"]')
    page.wait_for_url(re.compile(r"/compare\?runs="))
    chart = page.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
    assert int(chart.get_attribute("data-points")) >= 2 * STEPS
    page.wait_for_selector('[data-testid="config-table"]')
    assert page.is_checked('[data-testid="only-differences"]')
    differing = page.eval_on_selector_all('[data-testid="config-row"]', "rows => rows.map(r => r.dataset.field)")
    assert "params.learning_rate" in differing and "params.max_steps" not in differing
    cost_cells = page.eval_on_selector_all(
        '[data-testid="cost-table"] [data-metric="trainable_percent"]', "cells => cells.map(c => c.textContent)")
    assert len(cost_cells) == 2 and all(cell.strip() not in ("", "—") for cell in cost_cells)
    # The per-run table crowns nothing; the fair one (cells: method × the params that differ) ranks beyond the noise.
    assert page.locator('[data-testid="cost-table"] .best').count() == 0
    fair = page.wait_for_selector('[data-testid="fair-cost-table"]')
    cells = fair.eval_on_selector_all("tbody tr[data-cell]", "rows => rows.map(r => r.dataset.cell)")
    assert sorted(cells) == ["lora · learning_rate=0.002", "lora · learning_rate=0.005"]
    assert page.locator('[data-testid="fair-cost-table"] [data-best]').count() >= 1
    screenshot(page, "compare-page")


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


def test_cancel_then_resume_from_the_run_page(page, api, worker, sample_dataset):
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"],
            "params": {"max_steps": 5000, "eval_steps": 5000}}
    run_id = api.post("/runs", json=body).json()["id"]
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"/runs/{run_id}")
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(), lambda run: run["progress"]["current_step"] >= 2,
                           run_progress, message="the run to train a few steps")
    page.click('[data-testid="cancel-run"]')
    _wait_status(page, api, run_id, "canceled")
    canceled = api.get(f"/runs/{run_id}").json()
    resume = page.wait_for_selector('[data-testid="resume-run"]')
    assert resume.text_content() == f"Resume from step {canceled['checkpoint_step']}"
    resume.click()
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(),
                           lambda run: run["progress"]["current_step"] > canceled["checkpoint_step"], run_progress,
                           message="the resumed run to train past its checkpoint")
    page.wait_for_selector('[data-testid="run-header"]:has-text("attempt 2")')
    # The page follows the resumed run live: its chart grows past the checkpoint without a reload.
    wait_for_points(page, "train/loss", lambda n: n > canceled["checkpoint_step"], "the chart to grow after resume")
    page.click('[data-testid="cancel-run"]')
    _wait_status(page, api, run_id, "canceled")
    final = api.get(f"/runs/{run_id}").json()
    assert final["checkpoint_step"] > canceled["checkpoint_step"]
    page.wait_for_selector(f'[data-testid="artifacts"] td:text-is('
                           f'"checkpoints/checkpoint-{final["checkpoint_step"]}/trainer_state.json")')


def test_launch_form_shows_the_estimate_as_the_parameters_change(page, worker, settings):
    page.goto("/runs/new")
    # Only the declared training queues, each with the workers seen on it; no free text.
    page.wait_for_selector('[name="queue"] option', state="attached")
    queues = page.eval_on_selector_all('[name="queue"] option', "options => options.map(o => o.textContent)")
    assert [label.split(" · ")[0] for label in queues] == settings.run_queue_list
    assert all("worker" in label for label in queues) and f"{settings.default_queue} · " in queues[0]
    assert page.input_value('[name="queue"]') == settings.default_queue and not page.locator("input[name=queue]").count()
    page.select_option('[name="method"]', "lora")
    page.select_option('[name="model"]', "tunelab-tiny")
    total = page.wait_for_selector('[data-testid="estimate-total"]')
    without = total.text_content()
    assert "would cut activations" in page.text_content('[data-testid="estimate-checkpointing"]')
    page.wait_for_selector(f'[data-testid="estimate-devices"]:has-text("Queue {settings.default_queue}: ")'
                           ':has-text("(cpu, ")')

    page.check('[name="params.gradient_checkpointing"]')
    page.wait_for_selector('[data-testid="estimate-checkpointing"]:has-text("Gradient checkpointing is on")')
    assert total.text_content() != without

    # Past the tiny model's 512-token context: the estimate says why instead of a figure. (The warning beyond the
    # devices' memory, which the tiny model cannot reach any more, is tested through the API on a long-context copy.)
    page.fill('[name="params.max_length"]', "131072")
    refused = page.wait_for_selector('[data-testid="estimate-refused"]')
    assert "params.max_length" in refused.text_content() and "512" in refused.text_content()


def test_dpo_from_the_form_shows_its_own_settings_datasets_and_reward_charts(page, api, worker):
    page.goto("/runs/new")
    page.select_option('[name="objective"]', "dpo")
    datasets = page.eval_on_selector_all('[name="dataset"] option', "options => options.map(o => o.textContent)")
    assert datasets and all("preference" in text for text in datasets), datasets
    assert page.input_value('[name="params.beta"]') == "0.1", "the objective's own setting, at its default"
    assert not page.locator('[name="params.packing"]').count(), "SFT's packing is not a DPO setting"
    page.select_option('[name="method"]', "lora")
    page.fill('[name="params.max_steps"]', "4")
    page.fill('[name="params.eval_steps"]', "4")
    page.fill('[name="params.max_length"]', "64")
    page.click('button:has-text("Launch run")')
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    run_id = int(page.url.rsplit("/", 1)[1])
    _wait_status(page, api, run_id, "succeeded")
    run = api.get(f"/runs/{run_id}").json()
    assert run["objective"] == "dpo" and run["config"]["dataset"]["format"] == "preference"
    page.wait_for_selector('[data-testid="chart-eval/rewards/margins"]')
    assert not page.locator('[data-metric="perplexity"]').count(), "a DPO loss has no perplexity"
