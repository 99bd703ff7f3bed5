"""The web UI end to end in Chromium: launch from the form, watch it train live, clone, compare."""

import re

from playwright.sync_api import expect

from tests.conftest import wait_while_progressing
from tests.e2e.conftest import points_drawn, screenshot, wait_for_points
from tests.worker.conftest import run_progress

STEPS = 60
# The launch form's labels of the params these tests set (the registry's titles).
PARAM_LABELS = {"max_steps": "Max steps", "eval_steps": "Eval every (steps)", "learning_rate": "Learning rate",
                "max_length": "Max length (tokens)"}
BEST = re.compile(r"\bbest$")  # a cost table's cell marked best beyond the noise


def _wait_status(page, api, run_id: int, status: str) -> None:
    """Until the run page's live status (its header's status region) says `status`; fails only when the run itself
    stops making progress (a busy machine trains slowly, and a fixed deadline would fail a run that is merely slow).
    count() reads without waiting."""
    shown = page.get_by_role("status").filter(has_text=re.compile(rf"^{status}$"))
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(), lambda _: shown.count() > 0, run_progress,
                           message=f"the run page to show {status}")


def _launch_from_form(page, sample_dataset: dict, **params) -> int:
    page.goto("/runs/new")
    page.get_by_label("Method", exact=True).select_option("lora")
    page.get_by_label("Base model", exact=True).select_option("tunelab-tiny")
    page.get_by_label("Dataset", exact=True).select_option(str(sample_dataset["id"]))
    for field, value in params.items():
        page.get_by_label(PARAM_LABELS[field], exact=True).fill(str(value))
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def _cells(table) -> list[str]:
    """The cells (rows) a cost table ranks, by their row headers; the base model's row is not one of them."""
    return [name for name in table.get_by_role("rowheader").all_inner_texts()
            if not re.fullmatch(r"base model .* \(no training\)", name)]


def _column(table, header: str) -> list[str]:
    """A table's cells under `header`, one per body row (a row of cells, not of column headers)."""
    index = table.get_by_role("columnheader").all_inner_texts().index(header)
    return [row.get_by_role("cell").nth(index).inner_text()
            for row in table.get_by_role("row").filter(has=table.page.get_by_role("cell")).all()]


def test_launch_watch_clone_and_compare(page, api, worker, sample_dataset):
    first = _launch_from_form(page, sample_dataset, max_steps=STEPS, eval_steps=20, learning_rate=0.005)
    _wait_status(page, api, first, "running")
    page.evaluate("window.__sameDocument = true")
    page.get_by_role("region", name="Train loss", exact=True).wait_for()
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

    page.get_by_role("link", name="Clone", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/new\?clone=\d+"))
    expect(page.get_by_label("Max steps", exact=True)).to_have_value(str(STEPS))
    page.get_by_label("Learning rate", exact=True).fill("0.002")
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    second = int(page.url.rsplit("/", 1)[1])
    assert second != first
    _wait_status(page, api, second, "succeeded")
    assert api.get(f"/runs/{second}").json()["config"]["params"]["learning_rate"] == 0.002

    page.goto("/")
    for run_id in (first, second):
        name = api.get(f"/runs/{run_id}").json()["name"]
        page.get_by_role("checkbox", name=f"Select {name}", exact=True).check()
    page.get_by_role("button", name="Compare (2)").click()
    page.wait_for_url(re.compile(r"/compare\?runs="))
    chart = page.wait_for_selector('[data-testid="chart-train/loss"][data-series="2"]')
    assert int(chart.get_attribute("data-points")) >= 2 * STEPS
    config = page.get_by_role("table", name="Config", exact=True)
    expect(config).to_be_visible()
    assert page.get_by_label("Only differences").is_checked()
    differing = config.get_by_role("rowheader").all_inner_texts()
    assert "params.learning_rate" in differing and "params.max_steps" not in differing
    cost = page.get_by_role("table", name="Method cost", exact=True)
    cost_cells = _column(cost, "Trainable %")
    assert len(cost_cells) == 2 and all(cell.strip() not in ("", "—") for cell in cost_cells)
    # The per-run table crowns nothing; the fair one (cells: method × the params that differ) ranks beyond the noise.
    assert cost.get_by_role("cell").filter(has_text=BEST).count() == 0
    fair = page.get_by_role("table", name=re.compile(r"^Fair cost table"))
    expect(fair).to_be_visible()
    assert sorted(_cells(fair)) == ["lora · learning_rate=0.002", "lora · learning_rate=0.005"]
    assert fair.get_by_role("cell").filter(has_text=BEST).count() >= 1
    screenshot(page, "compare-page")


def test_out_of_bounds_value_shows_the_api_error_at_the_field(page, sample_dataset):
    page.goto("/runs/new")
    page.get_by_label("Method", exact=True).select_option("lora")
    page.get_by_label("Dataset", exact=True).select_option(str(sample_dataset["id"]))
    field = page.get_by_label("Learning rate", exact=True)
    field.fill("5")
    page.get_by_role("button", name="Launch run").click()
    # The error is the field's description: what a screen reader reads out with the field.
    expect(field).to_have_accessible_description(re.compile("less than or equal to 1"))
    expect(field).to_have_attribute("aria-invalid", "true")
    assert "/runs/new" in page.url


def test_deep_links_survive_a_reload(page, api):
    page.goto("/datasets")
    page.reload()
    expect(page.get_by_role("button", name="tiny-tasks", exact=True).first).to_be_visible()
    page.goto("/no-such-page")
    expect(page.get_by_role("heading", name="This page does not exist")).to_be_visible()


def test_dataset_upload_shows_line_numbered_errors_then_accepts_a_good_file(page, tmp_path):
    bad = tmp_path / "bad-rows.jsonl"
    bad.write_text('{"instruction": "add 1 and 2", "output": "3"}\n{"instruction": "no answer"}\n{oops\n')
    page.goto("/datasets")
    page.get_by_label("Dataset file").set_input_files(str(bad))
    refusal = page.get_by_role("alert").filter(has_text="bad-rows.jsonl was not accepted")
    expect(refusal).to_be_visible()
    errors = " ".join(refusal.get_by_role("listitem").all_inner_texts())
    assert "line 2" in errors and "output" in errors and "line 3" in errors
    # A dataset's row names it with a button (that opens its preview).
    assert page.get_by_role("button", name=re.compile(r"^bad-rows")).count() == 0

    good = tmp_path / "good-rows.jsonl"
    good.write_text('{"instruction": "add 1 and 2", "output": "3"}\n{"instruction": "add 2 and 2", "output": "4"}\n')
    page.get_by_label("Dataset file").set_input_files(str(good))
    expect(page.get_by_role("button", name=re.compile(r"^good-rows")).first).to_be_visible()


def test_cancel_then_resume_from_the_run_page(page, api, worker, sample_dataset):
    body = {"method": "lora", "model": "tunelab-tiny", "dataset": sample_dataset["id"],
            "params": {"max_steps": 5000, "eval_steps": 5000}}
    run = api.post("/runs", json=body).json()
    run_id = run["id"]
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"/runs/{run_id}")
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(), lambda run: run["progress"]["current_step"] >= 2,
                           run_progress, message="the run to train a few steps")
    cancel = page.get_by_role("button", name="Cancel", exact=True)
    cancel.click()
    _wait_status(page, api, run_id, "canceled")
    canceled = api.get(f"/runs/{run_id}").json()
    page.get_by_role("button", name=f"Resume from step {canceled['checkpoint_step']}", exact=True).click()
    # The header (a region named by the run) says which attempt trains; polled while the resumed run moves.
    second_attempt = page.get_by_role("region", name=run["name"], exact=True).get_by_text("attempt 2")
    wait_while_progressing(lambda: api.get(f"/runs/{run_id}").json(),
                           lambda run: run["progress"]["current_step"] > canceled["checkpoint_step"]
                           and second_attempt.count() > 0, run_progress,
                           message="the resumed run to train past its checkpoint, as its second attempt")
    # The page follows the resumed run live: its chart grows past the checkpoint without a reload.
    wait_for_points(page, "train/loss", lambda n: n > canceled["checkpoint_step"], "the chart to grow after resume")
    cancel.click()
    _wait_status(page, api, run_id, "canceled")
    final = api.get(f"/runs/{run_id}").json()
    assert final["checkpoint_step"] > canceled["checkpoint_step"]
    artifacts = page.get_by_role("region", name="Artifacts", exact=True)
    expect(artifacts.get_by_role("cell", name=f"checkpoints/checkpoint-{final['checkpoint_step']}/trainer_state.json",
                                 exact=True)).to_be_visible()


def test_launch_form_shows_the_estimate_as_the_parameters_change(page, worker, settings):
    page.goto("/runs/new")
    # Only the declared training queues, each with the workers seen on it; no free text.
    queue = page.get_by_label("Queue", exact=True)
    expect(queue.locator("option").first).to_be_attached()
    queues = queue.locator("option").all_text_contents()
    assert [label.split(" · ")[0] for label in queues] == settings.run_queue_list
    assert all("worker" in label for label in queues) and f"{settings.default_queue} · " in queues[0]
    assert queue.input_value() == settings.default_queue
    assert page.get_by_role("textbox", name="Queue").count() == 0
    page.get_by_label("Method", exact=True).select_option("lora")
    page.get_by_label("Base model", exact=True).select_option("tunelab-tiny")
    # The card is titled "Estimate · updating…" while new figures come.
    estimate = page.get_by_role("region", name=re.compile(r"^Estimate"))
    total = estimate.get_by_text(re.compile(r"^\S+ \S+ per device"))  # "1.2 MiB per device · … parameters trained"
    expect(total).to_be_visible()
    without = total.text_content()
    expect(estimate.get_by_text("would cut activations")).to_be_visible()
    expect(estimate.get_by_text(re.compile(rf"^Queue {re.escape(settings.default_queue)}: .*\(cpu, "))).to_be_visible()

    page.get_by_label("Gradient checkpointing", exact=True).check()
    expect(estimate.get_by_text("Gradient checkpointing is on")).to_be_visible()
    assert total.text_content() != without

    # Past the tiny model's 512-token context: the estimate says why instead of a figure. (The warning beyond the
    # devices' memory, which the tiny model cannot reach any more, is tested through the API on a long-context copy.)
    page.get_by_label("Max length (tokens)", exact=True).fill("131072")
    refused = estimate.get_by_role("status")
    expect(refused).to_contain_text("params.max_length")
    expect(refused).to_contain_text("512")


def test_dpo_from_the_form_shows_its_own_settings_datasets_and_reward_charts(page, api, worker):
    page.goto("/runs/new")
    page.get_by_label("Objective", exact=True).select_option("dpo")
    datasets = page.get_by_label("Dataset", exact=True).locator("option").all_text_contents()
    assert datasets and all("preference" in text for text in datasets), datasets
    assert page.get_by_label("Beta", exact=True).input_value() == "0.1", "the objective's own setting, at its default"
    assert not page.get_by_label("Packing", exact=True).count(), "SFT's packing is not a DPO setting"
    page.get_by_label("Method", exact=True).select_option("lora")
    for field, value in (("max_steps", "4"), ("eval_steps", "4"), ("max_length", "64")):
        page.get_by_label(PARAM_LABELS[field], exact=True).fill(value)
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    run_id = int(page.url.rsplit("/", 1)[1])
    _wait_status(page, api, run_id, "succeeded")
    run = api.get(f"/runs/{run_id}").json()
    assert run["objective"] == "dpo" and run["config"]["dataset"]["format"] == "preference"
    expect(page.get_by_role("region", name="Eval reward margin (chosen − rejected)", exact=True)).to_be_visible()
    summary = page.get_by_role("region", name="Summary", exact=True)
    expect(summary).to_be_visible()
    assert not summary.get_by_text("Perplexity", exact=True).count(), "a DPO loss has no perplexity"
