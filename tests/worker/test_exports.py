"""A trained run's adapter as one zip, and its merged model made by the real worker: both reload with plain
transformers/PEFT to the logits of the trained adapter."""

import io
import json
import zipfile

from tests.conftest import wait_while_progressing
from tests.worker.conftest import launch, wait_finished
from tunelab.services.catalog.models import resolve_model_path

EXPORT_FINISHED = {"succeeded", "failed"}


def _unzip(api, url: str, folder):
    response = api.get(url.removeprefix("/api/v1"))
    assert response.status_code == 200, response.text
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        archive.extractall(folder)
    return folder


def _wait_export(api, run_id: int, export_id: int) -> dict:
    def read() -> dict:
        return next(e for e in api.get(f"/runs/{run_id}/exports").json()["data"] if e["id"] == export_id)

    return wait_while_progressing(read, lambda e: e["status"] in EXPORT_FINISHED, lambda e: e["status"], stall_s=180,
                                  message=f"export {export_id} to finish")


def test_adapter_zip_and_merged_export_reload_to_the_trained_logits(api, worker, sample_dataset, settings, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = launch(api, "lora", sample_dataset["id"], max_steps=4, eval_steps=4)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    run_dir = settings.artifact_dir / str(run["id"])
    sample = json.loads((run_dir / "samples.jsonl").read_text().splitlines()[0])

    archives = {a["folder"]: a["download_url"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["archives"]}
    assert set(archives) == {"adapter"}
    unzipped = _unzip(api, archives["adapter"], tmp_path / "adapter")
    # The adapter names its base by the launch's model id, not by a path of the worker: the user brings the base.
    assert json.loads((unzipped / "adapter_config.json").read_text())["base_model_name_or_path"] == "tunelab-tiny"
    base = AutoModelForCausalLM.from_pretrained(str(settings.models_dir / "tunelab-tiny"))
    adapter = PeftModel.from_pretrained(base, str(unzipped)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(unzipped))
    input_ids = torch.tensor([tokenizer(sample["prompt"], add_special_tokens=False)["input_ids"]])
    assert input_ids[0].tolist() == sample["prompt_token_ids"]
    with torch.no_grad():
        adapter_logits = adapter(input_ids=input_ids).logits[0]
    assert torch.allclose(adapter_logits[-1, : len(sample["logits"])], torch.tensor(sample["logits"]), atol=1e-5)

    response = api.post(f"/runs/{run['id']}/exports")
    assert response.status_code == 202, response.text
    export = _wait_export(api, run["id"], response.json()["id"])
    assert export["status"] == "succeeded", export["status_reason"]
    assert export["archive_url"] == f"/api/v1/runs/{run['id']}/archives/merged.zip"
    listed = {a["path"]: a["kind"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["data"]}
    assert listed["merged/config.json"] == "merged_model" and "merged/model.safetensors" in listed

    merged = AutoModelForCausalLM.from_pretrained(str(_unzip(api, export["archive_url"], tmp_path / "merged"))).eval()
    with torch.no_grad():
        merged_logits = merged(input_ids=input_ids).logits[0]
    assert (merged_logits - adapter_logits).abs().max().item() <= 1e-5
    # The merge did change the base: a merged model equal to the bare base would pass the check above only if the
    # adapter did nothing.
    base = AutoModelForCausalLM.from_pretrained(resolve_model_path(settings, final["model"])).eval()
    with torch.no_grad():
        assert (base(input_ids=input_ids).logits[0] - merged_logits).abs().max().item() > 1e-4


def test_full_fine_tuning_zips_its_model_and_refuses_a_merge(api, worker, sample_dataset, settings, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = launch(api, "full", sample_dataset["id"], max_steps=2, eval_steps=2)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    sample = json.loads((settings.artifact_dir / str(run["id"]) / "samples.jsonl").read_text().splitlines()[0])

    archives = {a["folder"]: a["download_url"] for a in api.get(f"/runs/{run['id']}/artifacts").json()["archives"]}
    assert set(archives) == {"model"}
    unzipped = _unzip(api, archives["model"], tmp_path / "model")
    model = AutoModelForCausalLM.from_pretrained(str(unzipped)).eval()
    input_ids = torch.tensor([AutoTokenizer.from_pretrained(str(unzipped))(
        sample["prompt"], add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = model(input_ids=input_ids).logits[0, -1, : len(sample["logits"])]
    assert torch.allclose(logits, torch.tensor(sample["logits"]), atol=1e-5)

    refused = api.post(f"/runs/{run['id']}/exports")
    assert refused.status_code == 409 and "full fine-tuning" in refused.json()["error"]["message"]
