"""The playground in Chromium: on a trained run's page the stored samples show as a table (prompt, expected, base,
tuned), and one prompt fills the base model's and the run's columns side by side from the inference worker; a
shared page shows the samples and no playground."""

from tests.e2e.conftest import ARTIFACTS, REFRESH_SCREENSHOTS, SCREENSHOTS, close_page, open_page
from tests.worker.conftest import launch, wait_finished


def test_side_by_side_completions_and_the_samples_table(page, browser, api, api_server, worker, start_worker,
                                                       sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    assert wait_finished(api, run["id"])["status"] == "succeeded"
    start_worker(settings.infer_queue)
    page.goto(f"/runs/{run['id']}")

    table = page.wait_for_selector('[data-testid="samples-table"]')
    headers = [th.inner_text() for th in table.query_selector_all("th")]
    assert headers == ["Prompt", "Expected", "Base", "Tuned"]
    rows = table.query_selector_all('[data-testid="sample-row"]')
    assert 2 <= len(rows) <= 3
    assert not any("not recorded" in row.query_selector("td:nth-child(3)").inner_text() for row in rows), \
        "training wrote the base model's completions too"

    panel = page.wait_for_selector('[data-testid="playground"]')
    panel.query_selector('[data-testid="playground-prompt"]').fill("What is 2 plus 3?")
    panel.query_selector("#field-sampling\\.max_new_tokens").fill("12")
    panel.query_selector("#field-sampling\\.ignore_eos").check()
    panel.query_selector('[data-testid="playground-generate"]').click()

    for slot in (0, 1):
        page.wait_for_selector(f'[data-testid="playground-slot-{slot}"][data-status="done"]', timeout=180_000)
    labels = [h.inner_text() for h in page.query_selector_all('[data-testid="playground-columns"] h3')]
    assert labels == ["base: tunelab-tiny", f"run {run['id']}: {run['name']}"]
    for slot in (0, 1):
        assert page.inner_text(f'[data-testid="playground-completion-{slot}"]').strip(), f"slot {slot} is empty"
        assert page.inner_text(f'[data-testid="playground-slot-{slot}"] .help').startswith("12 tokens")
    _screenshot_of(page, ['[data-testid="samples-table"]', '[data-testid="playground"]'], "playground")

    link = api.post("/shares", json={"run_ids": [run["id"]]})
    assert link.status_code == 201, link.text
    shared = open_page(browser, api_server)
    shared.goto(f"/s/{link.json()['token']}")
    shared.wait_for_selector('[data-testid="samples-table"] [data-testid="sample-row"]')
    shared.wait_for_selector('[data-testid="run-page"]')
    assert shared.query_selector('[data-testid="playground"]') is None, "a share link spends no compute"
    close_page(shared, "playground-shared")


def _screenshot_of(page, selectors: list[str], name: str) -> None:
    """The part of the page the elements cover, for the README (with `make screenshots`), else a test artifact."""
    # Page coordinates (bounding_box() is the viewport's, which scrolls).
    boxes = [page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect();"
                                             " return [r.top + window.scrollY, r.bottom + window.scrollY]; }")
             for selector in selectors]
    top, bottom = min(box[0] for box in boxes), max(box[1] for box in boxes)
    folder = SCREENSHOTS if REFRESH_SCREENSHOTS else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), clip={"x": 0, "y": top - 8, "width": 1400,
                                                             "height": bottom - top + 16}, full_page=True)
