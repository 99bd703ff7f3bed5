"""The run page's exports in Chromium: the adapter's zip link, and Export merged model through to its zip."""

from playwright.sync_api import expect

from tests.conftest import wait_while_progressing
from tests.worker.conftest import launch, wait_finished

READY = "Merged model ready"


def test_run_page_offers_the_adapter_zip_and_exports_a_merged_model(page, api, worker, sample_dataset):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    assert wait_finished(api, run["id"])["status"] == "succeeded"
    page.goto(f"/runs/{run['id']}")

    artifacts = page.get_by_role("region", name="Artifacts", exact=True)
    adapter_zip = artifacts.get_by_role("link", name="Download adapter (.zip)")
    expect(adapter_zip).to_have_attribute("href", f"/api/v1/runs/{run['id']}/archives/adapter.zip")

    page.get_by_role("button", name="Export merged model", exact=True).click()
    # The export's status line is a live region beside the button (the header's other one says "succeeded"). Polled
    # without waiting while it moves (queued, merging, ready): a worker merging on a busy machine is slow, not stuck.
    statuses = page.get_by_role("status")

    def ready(shown: tuple[str, ...]) -> bool:
        assert not any(text.startswith("Export failed") for text in shown), shown
        return READY in shown

    wait_while_progressing(lambda: tuple(statuses.all_inner_texts()), ready, lambda shown: shown,
                           message="the merged model's export")
    # The export's own link, in the header beside its button (named by the run).
    header = page.get_by_role("region", name=run["name"], exact=True)
    merged_zip = header.get_by_role("link", name="Download merged model (.zip)")
    expect(merged_zip).to_have_attribute("href", f"/api/v1/runs/{run['id']}/archives/merged.zip")
    # The merged model joins the artifacts without a reload.
    expect(artifacts.get_by_role("link", name="Download merged model (.zip)")).to_be_visible()
    expect(artifacts.get_by_role("cell", name="merged/config.json", exact=True)).to_be_visible()
