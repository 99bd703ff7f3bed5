"""Tunelab configures TRL and changes nothing: its per-step losses equal a plain TRL script's."""

import pytest

from tunelab.training.registry import resolve_params

from .bare_trl import bare_trl_losses


@pytest.mark.parametrize("method", ["full", "lora"])
def test_engine_losses_match_plain_trl(method, train, assets, tmp_path):
    params = {"max_steps": 8, "eval_steps": 4}
    _, sink, _ = train(method, **params)
    engine_losses = [value for _, value in sink.series("train/loss")]

    reference = bare_trl_losses(
        assets.tiny_model, assets.sample_dataset, resolve_params(method, params), tmp_path / "bare", method=method
    )
    assert len(engine_losses) == len(reference) == 8
    assert engine_losses == pytest.approx(reference, abs=1e-6)
