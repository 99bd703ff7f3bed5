"""The run page's exports in Chromium: the adapter's zip link, and Export merged model through to its zip."""

from tests.worker.conftest import launch, wait_finished


def test_run_page_offers_the_adapter_zip_and_exports_a_merged_model(page, api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    assert wait_finished(api, run["id"])["status"] == "succeeded"
    page.goto(f"/runs/{run['id']}")

    adapter_zip = page.wait_for_selector('[data-testid="archives"] a:has-text("Download adapter (.zip)")')
    assert adapter_zip.get_attribute("href") == f"/api/v1/runs/{run['id']}/archives/adapter.zip"

    page.click('[data-testid="export-merged"] button:has-text("Export merged model")')
    page.wait_for_selector('[data-testid="export-status"]:text-is("Merged model ready")', timeout=180_000)
    merged_zip = page.wait_for_selector('[data-testid="download-merged"]')
    assert merged_zip.get_attribute("href") == f"/api/v1/runs/{run['id']}/archives/merged.zip"
    # The merged model joins the artifacts without a reload.
    page.wait_for_selector('[data-testid="archives"] a:has-text("Download merged model (.zip)")')
    page.wait_for_selector('[data-testid="artifacts"] td:text-is("merged/config.json")')
