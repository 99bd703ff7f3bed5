"""Every registered method trains a few steps on the tiny model and saves what reloads it."""

import pytest

from tunelab.training.registry import list_methods

from .conftest import read_jsonl

METHODS = [
    pytest.param(m.name, marks=[pytest.mark.requires_gpu] if m.requires_cuda else []) for m in list_methods()
]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_a_few_steps(method, train):
    result, sink, job = train(method, max_steps=3, eval_steps=3)

    losses = [loss for _, loss in sink.series("train/loss")]
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    assert 0 < result.summary["trainable_params"] <= result.summary["total_params"]
    saved = job.output_dir / ("adapter" if method != "full" else "model")
    assert any(saved.iterdir())
    assert (job.output_dir / "samples.jsonl").exists()
    # The samples table's base column: every method's samples hold the base model's completion too.
    assert all(isinstance(s["base_completion"], str) for s in read_jsonl(job.output_dir / "samples.jsonl"))


def test_dora_learns_a_magnitude_beside_the_lora_update(train):
    lora, _, _ = train("lora", max_steps=1, eval_split=0)
    dora, _, job = train("dora", max_steps=1, eval_split=0)
    assert dora.summary["trainable_params"] > lora.summary["trainable_params"]
    assert '"use_dora": true' in (job.output_dir / "adapter" / "adapter_config.json").read_text()


def test_qlora_without_cuda_says_it_needs_one(train):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        train("qlora", max_steps=1)
