"""Tunelab configures TRL and changes nothing: its per-step losses equal a plain TRL script's."""

import pytest

from .bare_trl import bare_trl_dpo_after_sft_losses, bare_trl_dpo_losses, bare_trl_losses, bare_trl_pretrain_losses


@pytest.mark.parametrize("method", ["full", "lora"])
def test_engine_losses_match_plain_trl(method, train, assets, tmp_path):
    params = {"max_steps": 8, "eval_steps": 4}
    _, sink, job = train(method, **params)
    engine_losses = [value for _, value in sink.series("train/loss")]

    # The engine's own resolved params (the tiny model's defaults in them), so both train the same configuration.
    reference = bare_trl_losses(assets.tiny_model, assets.sample_dataset, job.params, tmp_path / "bare", method=method)
    assert len(engine_losses) == len(reference) == 8
    assert engine_losses == pytest.approx(reference, abs=1e-6)


def test_pretrain_losses_match_plain_trl(train, assets, tmp_path):
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 3e-3}
    _, sink, job = train("full", objective="pretrain", dataset_path=assets.text_dataset, dataset_format="text",
                         **params)
    reference = bare_trl_pretrain_losses(assets.tiny_model, assets.text_dataset, job.params, tmp_path / "bare")
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)


def test_dpo_losses_match_plain_trl(train, assets, tmp_path):
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 5e-3, "beta": 0.2}
    _, sink, job = train("lora", objective="dpo", dataset_path=assets.preference_dataset,
                         dataset_format="preference", **params)
    reference = bare_trl_dpo_losses(assets.tiny_model, assets.preference_dataset, job.params, tmp_path / "bare")
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)


def test_dpo_started_from_an_sft_run_matches_plain_trl_loading_its_adapter(train, assets, tmp_path):
    from tunelab.training.sink import StartingWeights

    _, _, sft = train("lora", max_steps=4, eval_steps=4, learning_rate=5e-3, generation_eval_rows=0)
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 5e-3, "beta": 0.2,
              "generation_eval_rows": 0}
    start = (StartingWeights("adapter", sft.output_dir / "adapter", source="run 1 · sft-lora"),)
    _, sink, job = train("lora", objective="dpo", dataset_path=assets.preference_dataset, dataset_format="preference",
                         start_from=start, start_tokenizer_dir=sft.output_dir / "tokenizer", **params)
    reference = bare_trl_dpo_after_sft_losses(assets.tiny_model, sft.output_dir / "adapter", sft.output_dir / "tokenizer",
                                              assets.preference_dataset, job.params, tmp_path / "bare")
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)
    # Started from the SFT model, not the base: the same DPO from the base trains other losses.
    _, from_base, _ = train("lora", objective="dpo", dataset_path=assets.preference_dataset,
                            dataset_format="preference", **params)
    assert [v for _, v in from_base.series("train/loss")] != pytest.approx(engine_losses, abs=1e-4)
    import json
    assert json.loads((job.output_dir / "config.json").read_text())["start_from"] == [
        {"kind": "adapter", "run": "run 1 · sft-lora"}]
