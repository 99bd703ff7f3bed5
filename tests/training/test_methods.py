"""Every registered method trains a few steps on the tiny model and saves what reloads it."""

import pytest

from tunelab.training.registry import list_methods


@pytest.mark.parametrize("method", [m.name for m in list_methods()])
def test_every_method_trains_a_few_steps(method, train):
    result, sink, job = train(method, max_steps=3, eval_steps=3)

    losses = [loss for _, loss in sink.series("train/loss")]
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    assert 0 < result.summary["trainable_params"] <= result.summary["total_params"]
    saved = job.output_dir / ("adapter" if method != "full" else "model")
    assert any(saved.iterdir())
    assert (job.output_dir / "samples.jsonl").exists()
