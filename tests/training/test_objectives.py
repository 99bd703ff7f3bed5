"""Each objective trains through the engine on the bundled tiny model and its own measure improves: continued
pretraining lowers perplexity on packed blocks; DPO raises the reward margin of the chosen answers."""

import json

import pytest

from .conftest import read_jsonl


def test_pretrain_packs_text_into_full_blocks_and_lowers_perplexity(train, assets):
    result, sink, job = train("full", objective="pretrain", dataset_path=assets.text_dataset, dataset_format="text",
                              max_steps=12, eval_steps=12, max_length=64, per_device_train_batch_size=4,
                              learning_rate=3e-3)

    perplexity = sink.series("eval/perplexity")
    assert [step for step, _ in perplexity] == [0, 12]
    assert perplexity[-1][1] < perplexity[0][1] * 0.7
    assert result.summary["final_eval_perplexity"] == pytest.approx(perplexity[-1][1])
    # Packed: every row of a batch is a full max_length block, so tokens per step are exactly batch × max_length.
    tokens = sink.series("train/tokens_seen")
    assert [value for _, value in tokens][:3] == [4 * 64, 8 * 64, 12 * 64]
    assert json.loads((job.output_dir / "config.json").read_text())["objective"] == "pretrain"


def test_dpo_raises_the_reward_margin_and_reports_its_metrics(train, assets):
    result, sink, job = train("lora", objective="dpo", dataset_path=assets.preference_dataset,
                              dataset_format="preference", max_steps=10, eval_steps=10, learning_rate=5e-3,
                              per_device_train_batch_size=8, max_length=64)

    for key in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
                "logps/rejected"):
        assert sink.series(f"train/{key}"), key
        assert sink.series(f"eval/{key}"), key
    margins = [value for _, value in sink.series("eval/rewards/margins")]
    assert margins[0] == pytest.approx(0.0, abs=1e-6), "the policy starts as the reference"
    assert margins[-1] > 0.01
    assert sink.series("train/loss")[-1][1] < 0.69, "below ln 2, the loss of a policy equal to its reference"
    assert not sink.series("eval/perplexity") and "final_eval_perplexity" not in result.summary
    assert (job.output_dir / "adapter" / "adapter_config.json").exists()
    samples = read_jsonl(job.output_dir / "samples.jsonl")
    assert samples and all(s["expected"] for s in samples), "a preference sample expects the chosen answer"


def test_full_dpo_uses_a_frozen_copy_of_the_base_as_reference(train, assets):
    result, sink, _ = train("full", objective="dpo", dataset_path=assets.preference_dataset,
                            dataset_format="preference", max_steps=3, eval_steps=3, learning_rate=1e-3,
                            per_device_train_batch_size=4, max_length=64)
    margins = [value for _, value in sink.series("eval/rewards/margins")]
    assert margins[0] == pytest.approx(0.0, abs=1e-6) and margins[-1] != margins[0]
    assert result.summary["trainable_params"] == result.summary["total_params"]


def test_an_objective_refuses_a_format_it_does_not_take(train, assets):
    with pytest.raises(ValueError, match="dpo.*takes preference"):
        train("lora", objective="dpo", max_steps=1)


def test_each_preference_objective_names_itself_when_it_refuses_a_format():
    """ORPO shared DPO's row conversion, and its refusal said "the dpo objective"."""
    from tunelab.training.registry import get_objective

    for name in ("dpo", "orpo"):
        with pytest.raises(ValueError, match=f"the {name} objective takes preference datasets, not 'instruction'"):
            get_objective(name).convert_rows([{"instruction": "2+2", "output": "4"}], "instruction")


def test_orpo_learns_the_chosen_answers_without_a_reference(train, assets):
    result, sink, _ = train("lora", objective="orpo", dataset_path=assets.preference_dataset,
                            dataset_format="preference", max_steps=8, eval_steps=8, learning_rate=5e-3,
                            per_device_train_batch_size=8, max_length=64)
    nll = [value for _, value in sink.series("eval/nll_loss")]
    assert len(nll) == 2 and nll[-1] < nll[0], "the SFT part of ORPO's loss falls"
    assert sink.series("train/rewards/margins") and sink.series("train/log_odds_ratio")
    assert result.summary["trainable_params"] < result.summary["total_params"]


def test_sft_packing_fills_each_row_with_several_examples(train):
    _, unpacked, _ = train("lora", max_steps=1, eval_split=0, per_device_train_batch_size=2, max_length=128)
    _, packed, _ = train("lora", max_steps=1, eval_split=0, per_device_train_batch_size=2, max_length=128,
                         packing=True)
    tokens = {name: sink.series("train/tokens_seen")[0][1] for name, sink in (("unpacked", unpacked),
                                                                              ("packed", packed))}
    # Two tiny-task examples are ~40 tokens; two packed rows hold as many whole examples as fit in 2 × 128.
    assert tokens["packed"] > 3 * tokens["unpacked"], tokens
    assert tokens["packed"] <= 2 * 128
