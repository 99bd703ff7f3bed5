"""The dataset preview through SmolLM2's tokenizer, whose folder holds only the GGUF (and, once a run trained on it,
the GGUF's Hugging Face copy): the tokenizer comes from where training takes it.

Skipped unless `make models` has run (or TUNELAB_SMOLLM2_DIR names a folder holding the .gguf)."""

import uuid

import pytest

from tests.api.test_datasets_api import URL, jsonl, upload
from tests.training.test_smollm2 import require_smollm2_gguf


@pytest.fixture
def smollm2_gguf():
    return require_smollm2_gguf()


@pytest.mark.parametrize("with_hf_copy", [False, True], ids=["gguf-only", "with-hf-copy"])
def test_preview_renders_chat_rows_through_the_gguf_models_tokenizer(client, settings, smollm2_gguf, with_hf_copy):
    # A folder of links under the models dir (a model root): the GGUF alone, or with the copy training made of it.
    model_dir = settings.models_dir / f"smollm2-{uuid.uuid4().hex[:8]}"
    model_dir.mkdir(parents=True)
    (model_dir / smollm2_gguf.name).symlink_to(smollm2_gguf)
    if with_hf_copy:
        from tunelab.training.base_models import ensure_hf_base, hf_base_dir

        (model_dir / "hf").mkdir()
        hf_base_dir(model_dir / smollm2_gguf.name).symlink_to(ensure_hf_base(smollm2_gguf))
    rows = [{"messages": [{"role": "user", "content": f"Hi {uuid.uuid4().hex}"},
                          {"role": "assistant", "content": "Hello!"}]}]
    dataset_id = upload(client, jsonl(rows)).json()["id"]

    response = client.get(f"{URL}/{dataset_id}/preview", params={"model": str(model_dir), "max_length": 8})

    assert response.status_code == 200, response.text
    preview = response.json()
    assert "<|im_start|>assistant\nHello!<|im_end|>" in preview["rows"][0]["text"]
    assert preview["token_stats"]["count"] == 1 and preview["token_stats"]["max"] > 8
    assert preview["truncation"]["truncated_rows"] == 1
