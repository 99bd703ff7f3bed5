"""The playground in Chromium: on a trained run's page the stored samples show as a table (prompt, expected, base,
tuned), and one prompt fills the base model's and the run's columns side by side from the inference worker; a
shared page shows the samples and no playground."""

from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, REFRESH_SCREENSHOTS, SCREENSHOTS, close_page, open_page, wait_for_completions
from tests.worker.conftest import launch, wait_finished


def test_side_by_side_completions_and_the_samples_table(page, browser, api, api_server, worker, start_worker,
                                                       sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    assert wait_finished(api, run["id"])["status"] == "succeeded"
    start_worker(settings.infer_queue)
    page.goto(f"/runs/{run['id']}")

    samples = page.get_by_role("region", name="Samples", exact=True)
    expect(samples.get_by_role("table")).to_be_visible()
    assert samples.get_by_role("columnheader").all_inner_texts() == ["Prompt", "Expected", "Base", "Tuned"]
    rows = samples.get_by_role("row").filter(has=page.get_by_role("cell")).all()
    assert 2 <= len(rows) <= 3
    assert not any("not recorded" in row.get_by_role("cell").nth(2).inner_text() for row in rows), \
        "training wrote the base model's completions too"

    panel = page.get_by_role("region", name="Playground", exact=True)
    panel.get_by_role("textbox", name="Prompt").fill("What is 2 plus 3?")
    panel.get_by_label("Max new tokens").fill("12")
    panel.get_by_label("Past the end token").check()
    panel.get_by_role("button", name="Generate").click()

    # Each column is a region named by its model: its completion, then its status line.
    columns = wait_for_completions(panel, 2, "the base model's and the run's completions")
    assert panel.get_by_role("heading", level=3).all_inner_texts() == ["base: tunelab-tiny",
                                                                       f"run {run['id']}: {run['name']}"]
    for text in columns:
        label, *completion, status = text.strip().split("\n")
        assert "".join(completion).strip(), f"{label}: the completion is empty"
        assert status.startswith("12 tokens"), f"{label}: {status}"
    _screenshot_of(page, [samples, panel], "playground")

    link = api.post("/shares", json={"run_ids": [run["id"]]})
    assert link.status_code == 201, link.text
    shared = open_page(browser, api_server)
    shared.goto(f"/s/{link.json()['token']}")
    expect(shared.get_by_role("region", name="Samples", exact=True).get_by_role("cell").first).to_be_visible()
    expect(shared.get_by_role("heading", name=run["name"], level=1)).to_be_visible()
    assert shared.get_by_role("region", name="Playground", exact=True).count() == 0, "a share link spends no compute"
    close_page(shared, "playground-shared")


def _screenshot_of(page, parts: list, name: str) -> None:
    """The part of the page the elements (locators) cover, for the README (with `make screenshots`), else a test
    artifact."""
    # Page coordinates (bounding_box() is the viewport's, which scrolls).
    boxes = [part.evaluate("e => { const r = e.getBoundingClientRect();"
                           " return [r.top + window.scrollY, r.bottom + window.scrollY]; }") for part in parts]
    top, bottom = min(box[0] for box in boxes), max(box[1] for box in boxes)
    folder = SCREENSHOTS if REFRESH_SCREENSHOTS else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), clip={"x": 0, "y": top - 8, "width": 1400,
                                                             "height": bottom - top + 16}, full_page=True)
