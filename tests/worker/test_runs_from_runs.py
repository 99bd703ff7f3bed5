"""A run starts from another run's weights: SFT then DPO from it through the API, worker and training, with its
lineage recorded and shown, the parent kept while its child needs it, and what cannot be started from refused."""

from tests.worker.conftest import bundled_dataset, launch, wait_finished


def test_dpo_starts_from_an_sft_run_and_the_lineage_is_kept(api, worker, sample_dataset):
    sft = launch(api, "lora", sample_dataset["id"], max_steps=4, eval_steps=4, generation_eval_rows=2)
    assert wait_finished(api, sft["id"])["status"] == "succeeded"
    preferences = bundled_dataset(api, "tiny-preferences")
    response = api.post("/runs", json={"objective": "dpo", "method": "lora", "base_run": sft["id"],
                                       "dataset": preferences["id"],
                                       "params": {"max_steps": 2, "eval_steps": 2, "max_length": 64,
                                                  "generation_eval_rows": 2}})
    assert response.status_code == 201, response.text
    dpo = response.json()
    assert dpo["base_run_id"] == sft["id"] and dpo["model"] == sft["model"]
    assert dpo["config"]["base_run"]["id"] == sft["id"]
    assert "path" not in str(dpo["config"]["start_from"])  # run ids and names, never a server path
    final = wait_finished(api, dpo["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    saved = api.get(f"/runs/{dpo['id']}/artifacts/config.json").json()
    assert saved["start_from"] == [{"kind": "adapter", "run": f"run {sft['id']} · {sft['name']}"}]

    lineage = api.get(f"/runs/{dpo['id']}/lineage").json()
    assert [r["id"] for r in lineage["ancestors"]] == [sft["id"]] and lineage["children"] == []
    assert [r["id"] for r in api.get(f"/runs/{sft['id']}/lineage").json()["children"]] == [dpo["id"]]

    # The parent is kept while a run that started from it exists: it loads the parent's weights.
    refused = api.delete(f"/runs/{sft['id']}")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "RUN_IN_USE", refused.text
    assert str(dpo["id"]) in refused.json()["error"]["message"]
    # A clone starts where its source started.
    clone = api.post(f"/runs/{dpo['id']}/clone", json={"params": {"max_steps": 1}}).json()
    assert clone["base_run_id"] == sft["id"]
    api.post(f"/runs/{clone['id']}/cancel")
    wait_finished(api, clone["id"])
    # A study compares methods on top of the SFT run: each of its runs starts from it.
    study = api.post("/studies", json={"name": "dpo after sft", "base_run": sft["id"], "objective": "dpo",
                                       "dataset_id": preferences["id"], "methods": ["lora", "full"], "seeds": [1],
                                       "budget": {"max_steps": 1}, "params": {"max_length": 64}})
    assert study.status_code == 201, study.text
    study_runs = study.json()["runs"]
    assert len(study_runs) == 2 and all(r["base_run_id"] == sft["id"] and r["model"] == sft["model"]
                                        for r in study_runs)
    assert study.json()["study"]["spec"]["base_run"] == sft["id"]
    for run in study_runs:
        api.post(f"/runs/{run['id']}/cancel")
        wait_finished(api, run["id"])
    # Deleting them all at once deletes the children first.
    bulk = api.post("/runs/bulk", json={"action": "delete",
                                        "run_ids": [sft["id"], dpo["id"], clone["id"], *(r["id"] for r in study_runs)]})
    assert bulk.status_code == 200, bulk.text
    assert api.get(f"/runs/{sft['id']}").status_code == 404


def test_what_cannot_be_started_from_is_refused_naming_the_field(api, sample_dataset):
    queued = launch(api, "lora", sample_dataset["id"], max_steps=1)

    def start_from(run_id, **body):
        return api.post("/runs", json={"method": "lora", "base_run": run_id, "dataset": sample_dataset["id"], **body})

    not_done = start_from(queued["id"])
    assert not_done.status_code == 422 and "is queued" in not_done.json()["error"]["message"]
    assert not_done.json()["error"]["details"][0]["field"] == "base_run"
    missing = start_from(999_999)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RUN_NOT_FOUND"
    no_model = api.post("/runs", json={"method": "lora", "dataset": sample_dataset["id"]})
    assert no_model.status_code == 422 and no_model.json()["error"]["message"].startswith("model:")
    study = api.post("/studies", json={"name": "from a queued run", "base_run": queued["id"], "methods": ["lora"],
                                       "dataset_id": sample_dataset["id"], "budget": {"max_steps": 1}})
    assert study.status_code == 422 and "is queued" in study.json()["error"]["message"], study.text
    no_study_model = api.post("/studies", json={"name": "no model", "methods": ["lora"],
                                                "dataset_id": sample_dataset["id"], "budget": {"max_steps": 1}})
    assert no_study_model.status_code == 422 and "model" in no_study_model.json()["error"]["message"]
    api.post(f"/runs/{queued['id']}/cancel")
