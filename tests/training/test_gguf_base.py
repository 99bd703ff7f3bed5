"""An adapter trained on a GGUF base (SmolLM2) names a base that plain transformers and PEFT load.

Skipped unless `make models` has run (or TUNELAB_SMOLLM2_DIR names a folder holding the .gguf).
"""

import hashlib
import json
import os

import pytest

from tests.training.conftest import read_jsonl
from tests.training.test_smollm2 import require_smollm2_gguf


@pytest.fixture
def gguf_folder(tmp_path):
    """A folder of this test's own holding SmolLM2's GGUF (a hard link), so the Hugging Face copy is made here."""
    ggufs = [require_smollm2_gguf()]
    folder = tmp_path / "smollm2"
    folder.mkdir()
    try:
        os.link(ggufs[0], folder / ggufs[0].name)
    except OSError:  # another file system
        (folder / ggufs[0].name).write_bytes(ggufs[0].read_bytes())
    return folder


def test_adapter_of_a_gguf_base_loads_with_auto_peft(train, gguf_folder):
    import torch
    from peft import AutoPeftModelForCausalLM

    from tunelab.services.catalog.models import model_identity
    from tunelab.training.base_models import ensure_hf_base

    gguf = next(gguf_folder.glob("*.gguf"))
    identity_before = model_identity(gguf_folder)
    result, _, job = train("lora", model=gguf_folder, max_steps=1, eval_split=0.01, per_device_train_batch_size=2,
                           max_length=64)

    hf_base = gguf_folder / "hf" / f"{gguf.stem}-{identity_before['gguf_sha256'][:16]}"
    adapter_config = json.loads((job.output_dir / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == str(hf_base)
    assert sorted(p.name for p in (gguf_folder / "hf").iterdir()) == [hf_base.name]  # no partial copy left

    # The identity names the GGUF's bytes, and is the same before and after the copy is made beside it.
    assert identity_before["gguf_sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert identity_before["gguf_file"] == gguf.name and identity_before["gguf_size_bytes"] == gguf.stat().st_size
    assert identity_before["hf_base_path"] == str(hf_base)
    assert model_identity(gguf_folder) == identity_before

    # Made once: a later run finds it and writes nothing.
    weights = hf_base / "model.safetensors"
    written_at = weights.stat().st_mtime_ns
    assert ensure_hf_base(gguf) == hf_base and weights.stat().st_mtime_ns == written_at

    model = AutoPeftModelForCausalLM.from_pretrained(str(job.output_dir / "adapter")).eval()
    sample = read_jsonl(job.output_dir / "samples.jsonl")[0]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([sample["prompt_token_ids"]])).logits[0, -1, : len(sample["logits"])]
    assert torch.allclose(logits, torch.tensor(sample["logits"]), atol=1e-5), (logits, sample["logits"])
