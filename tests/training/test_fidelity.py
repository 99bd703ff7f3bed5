"""Tunelab configures TRL and changes nothing: its per-step losses equal a plain TRL script's."""

import pytest

from .bare_trl import (
    bare_trl_dpo_after_sft_losses,
    bare_trl_dpo_losses,
    bare_trl_kto_losses,
    bare_trl_losses,
    bare_trl_online_rl_losses,
    bare_trl_pretrain_losses,
    bare_trl_reward_losses,
    bare_trl_simpo_losses,
)


@pytest.mark.parametrize("method", ["full", "lora"])
def test_engine_losses_match_plain_trl(method, train, assets, tmp_path):
    params = {"max_steps": 8, "eval_steps": 4}
    _, sink, job = train(method, **params)
    engine_losses = [value for _, value in sink.series("train/loss")]

    # The engine's own resolved params (the tiny model's defaults in them), so both train the same configuration.
    reference = bare_trl_losses(assets.tiny_model, assets.sample_dataset, job.params, tmp_path / "bare", method=method)
    assert len(engine_losses) == len(reference) == 8
    assert engine_losses == pytest.approx(reference, abs=1e-6)


# The methods and LoRA's options beyond the plain ones above, each against the plain TRL script that sets it up by
# hand (NEFTune draws its noise from the seeded generator: the same seed, the same losses).
METHOD_OPTIONS = {
    "freeze": ("freeze", {}),
    "freeze-embeddings-head": ("freeze", {"trainable_layers": 1, "train_embeddings": True, "train_head": True}),
    "oft": ("oft", {}),
    "lora-rslora-pissa": ("lora", {"use_rslora": True, "init_lora_weights": "pissa"}),
    "lora-plus": ("lora", {"loraplus_lr_ratio": 16.0}),
    "lora-neftune": ("lora", {"neftune_noise_alpha": 5.0}),
}
FIDELITY_STEPS = {"max_steps": 8, "eval_steps": 4}


@pytest.fixture(scope="module")
def plain_lora_losses(assets, tmp_path_factory) -> list[float]:
    from tunelab.training.registry import resolve_params

    from .conftest import tiny_defaults

    params = resolve_params("lora", {**tiny_defaults("sft", "lora"), **FIDELITY_STEPS})
    return bare_trl_losses(assets.tiny_model, assets.sample_dataset, params, tmp_path_factory.mktemp("plain"),
                           method="lora")


@pytest.mark.parametrize("case", METHOD_OPTIONS)
def test_engine_losses_match_plain_trl_for_each_method_and_option(case, train, assets, tmp_path, plain_lora_losses):
    method, options = METHOD_OPTIONS[case]
    _, sink, job = train(method, **FIDELITY_STEPS, **options)
    engine_losses = [value for _, value in sink.series("train/loss")]

    reference = bare_trl_losses(assets.tiny_model, assets.sample_dataset, job.params, tmp_path / "bare", method=method)
    assert len(engine_losses) == len(reference) == 8
    assert engine_losses == pytest.approx(reference, abs=1e-6)
    if method == "lora":
        assert engine_losses != pytest.approx(plain_lora_losses, abs=1e-4), "the option changes the training"


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


@pytest.mark.parametrize("method", ["full", "lora"])
def test_reward_losses_match_plain_trl(method, train, assets, tmp_path):
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 5e-3,
              "center_rewards_coefficient": 0.01}
    _, sink, job = train(method, objective="reward", dataset_path=assets.preference_dataset,
                         dataset_format="preference", **params)
    reference = bare_trl_reward_losses(assets.tiny_model, assets.preference_dataset, job.params, tmp_path / "bare",
                                       method=method)
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)


def test_simpo_losses_match_plain_trl(train, assets, tmp_path):
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 5e-3, "beta": 2.5,
              "simpo_gamma": 0.8, "cpo_alpha": 0.5, "generation_eval_rows": 0}
    _, sink, job = train("lora", objective="simpo", dataset_path=assets.preference_dataset,
                         dataset_format="preference", **params)
    reference = bare_trl_simpo_losses(assets.tiny_model, assets.preference_dataset, job.params, tmp_path / "bare")
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)


@pytest.mark.parametrize("method", ["full", "lora"])
def test_kto_losses_match_plain_trl(method, train, assets, tmp_path):
    params = {"max_steps": 6, "eval_steps": 3, "max_length": 64, "learning_rate": 5e-3, "beta": 0.2,
              "desirable_weight": 1.2, "undesirable_weight": 0.9, "generation_eval_rows": 0}
    _, sink, job = train(method, objective="kto", dataset_path=assets.feedback_dataset, dataset_format="feedback",
                         **params)
    reference = bare_trl_kto_losses(assets.tiny_model, assets.feedback_dataset, job.params, tmp_path / "bare",
                                    method=method)
    engine_losses = [value for _, value in sink.series("train/loss")]
    assert len(engine_losses) == len(reference) == 6
    assert engine_losses == pytest.approx(reference, abs=1e-6)


ONLINE_RL = {"max_steps": 4, "eval_split": 0, "per_device_train_batch_size": 4,
             "num_generations": 4, "max_completion_length": 6, "learning_rate": 5e-3, "reward_exact_match": 0.0,
             "reward_length": 0.5, "reward_length_target": 3, "reward_model": 1.0, "generation_eval_rows": 0}


@pytest.mark.parametrize("objective", ["grpo", "rloo"])
def test_online_rl_losses_and_rewards_match_plain_trl(objective, train, assets, tmp_path):
    """The policy samples its own completions (seeded), rewarded by a reward run's model and a length penalty."""
    from tunelab.training.sink import ScoringModel, StartingWeights

    _, _, reward_job = train("full", objective="reward", dataset_path=assets.preference_dataset,
                             dataset_format="preference", max_steps=2, eval_split=0, max_length=64)
    scorer = ScoringModel(base=str(assets.tiny_model),
                          weights=(StartingWeights("model", reward_job.output_dir / "model", source="run 1 · reward"),),
                          tokenizer_dir=reward_job.output_dir / "tokenizer", source="run 1 · reward")
    _, sink, job = train("lora", objective=objective, scoring_model=scorer, reward_model_run=1, **ONLINE_RL)
    losses, rewards = bare_trl_online_rl_losses(objective, assets.tiny_model, assets.sample_dataset, job.params,
                                                tmp_path / "bare", reward_job.output_dir / "model",
                                                reward_job.output_dir / "tokenizer")
    assert len(losses) == 4
    assert [value for _, value in sink.series("train/loss")] == pytest.approx(losses, abs=1e-6)
    assert [value for _, value in sink.series("train/reward")] == pytest.approx(rewards, abs=1e-6)
    assert any(loss != 0 for loss in losses), "the rewards differ within a group, so the policy learns"
    assert sink.series("train/rewards/reward_model/mean") and sink.series("train/rewards/length/mean")
