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


@pytest.mark.parametrize("method", ["full", "lora"])
def test_a_reward_model_learns_to_score_chosen_above_rejected_and_loads_with_plain_transformers(method, train, assets):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    result, sink, job = train(method, objective="reward", dataset_path=assets.preference_dataset,
                              dataset_format="preference", max_steps=24, eval_steps=12, learning_rate=3e-3,
                              per_device_train_batch_size=8, max_length=64)

    for key in ("accuracy", "margin", "mean_reward", "min_reward", "max_reward"):
        assert sink.series(f"train/{key}"), key
        assert sink.series(f"eval/{key}"), key
    accuracies = [value for _, value in sink.series("eval/accuracy")]
    assert accuracies[-1] > accuracies[0] and accuracies[-1] >= 0.75, accuracies
    assert result.summary["reward_accuracy"] == accuracies[-1]
    assert result.summary["reward_margin"] == sink.series("eval/margin")[-1][1] > 0
    assert not sink.series("eval/perplexity") and "final_eval_perplexity" not in result.summary
    assert not (job.output_dir / "samples.jsonl").exists(), "a reward model scores; it generates no samples"

    if method == "full":
        model = AutoModelForSequenceClassification.from_pretrained(job.output_dir / "model")
    else:
        from peft import AutoPeftModelForSequenceClassification

        model = AutoPeftModelForSequenceClassification.from_pretrained(job.output_dir / "adapter", num_labels=1)
    tokenizer = AutoTokenizer.from_pretrained(job.output_dir / "tokenizer")
    model.eval()

    def score(prompt: str, answer: str) -> float:
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt},
                                             {"role": "assistant", "content": answer}], tokenize=False)
        with torch.no_grad():
            return model(**tokenizer(text, return_tensors="pt")).logits[0, 0].item()

    pairs = read_jsonl(assets.preference_dataset)[:40]
    chosen_higher = sum(score(p["prompt"], p["chosen"]) > score(p["prompt"], p["rejected"]) for p in pairs)
    assert chosen_higher / len(pairs) >= 0.75, "the saved model scores as the trained one did"

    if method == "lora":
        # The merged export is a plain reward model that scores as base + adapter do.
        from tunelab.training.merge import merge_adapter

        merged_dir = job.output_dir / "merged"
        merge_adapter(job.output_dir / "adapter", job.output_dir / "tokenizer", merged_dir,
                      head="sequence_classification")
        merged = AutoModelForSequenceClassification.from_pretrained(merged_dir).eval()
        inputs = tokenizer("How many letters does this word have?", return_tensors="pt")
        with torch.no_grad():
            assert merged(**inputs).logits.item() == pytest.approx(model(**inputs).logits.item(), abs=1e-5)


def test_an_objective_refuses_a_format_it_does_not_take(train, assets):
    with pytest.raises(ValueError, match="dpo.*takes preference"):
        train("lora", objective="dpo", max_steps=1)


def test_each_preference_objective_names_itself_when_it_refuses_a_format():
    """ORPO shared DPO's row conversion, and its refusal said "the dpo objective"."""
    from tunelab.training.registry import get_objective

    for name in ("dpo", "orpo", "simpo", "reward"):
        with pytest.raises(ValueError, match=f"the {name} objective takes preference datasets, not 'instruction'"):
            get_objective(name).convert_rows([{"instruction": "2+2", "output": "4"}], "instruction")
    with pytest.raises(ValueError, match="the kto objective takes feedback or preference datasets, not 'instruction'"):
        get_objective("kto").convert_rows([{"instruction": "2+2", "output": "4"}], "instruction")


def test_orpo_learns_the_chosen_answers_without_a_reference(train, assets):
    result, sink, _ = train("lora", objective="orpo", dataset_path=assets.preference_dataset,
                            dataset_format="preference", max_steps=8, eval_steps=8, learning_rate=5e-3,
                            per_device_train_batch_size=8, max_length=64)
    nll = [value for _, value in sink.series("eval/nll_loss")]
    assert len(nll) == 2 and nll[-1] < nll[0], "the SFT part of ORPO's loss falls"
    assert sink.series("train/rewards/margins") and sink.series("train/log_odds_ratio")
    assert result.summary["trainable_params"] < result.summary["total_params"]


def test_simpo_raises_the_reward_margin_without_a_reference_and_reports_its_metrics(train, assets):
    result, sink, job = train("lora", objective="simpo", dataset_path=assets.preference_dataset,
                              dataset_format="preference", max_steps=12, eval_steps=6, learning_rate=5e-3,
                              per_device_train_batch_size=8, max_length=64)

    for key in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
                "logps/rejected", "nll_loss"):
        assert sink.series(f"train/{key}"), key
        assert sink.series(f"eval/{key}"), key
    margins = [value for _, value in sink.series("eval/rewards/margins")]
    accuracies = [value for _, value in sink.series("eval/rewards/accuracies")]
    assert len(margins) == 3 and margins[-1] > margins[0] + 0.2 and accuracies[-1] > 0.7, (margins, accuracies)
    # The reward is beta times the mean log-probability per token of the answer, with no reference to subtract.
    chosen, logps = sink.series("eval/rewards/chosen")[-1][1], sink.series("eval/logps/chosen")[-1][1]
    assert chosen == pytest.approx(2.0 * logps, rel=1e-4)
    assert {value for _, value in sink.series("train/nll_loss")} == {0.0}, "pure SimPO: cpo_alpha is 0"
    assert result.summary["reward_accuracy"] == accuracies[-1]
    assert not sink.series("eval/perplexity") and "final_eval_perplexity" not in result.summary
    assert (job.output_dir / "adapter" / "adapter_config.json").exists()


def test_kto_raises_desirable_rewards_above_undesirable_ones_on_feedback_and_reports_its_metrics(train, assets):
    from tunelab.training.engine import split_records

    result, sink, job = train("lora", objective="kto", dataset_path=assets.feedback_dataset,
                              dataset_format="feedback", max_steps=12, eval_steps=12, learning_rate=5e-3,
                              per_device_train_batch_size=8, max_length=64)

    for key in ("rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen", "logps/rejected", "kl"):
        assert sink.series(f"train/{key}"), key
        assert sink.series(f"eval/{key}"), key
    margins = [value for _, value in sink.series("eval/rewards/margins")]
    assert margins[0] == pytest.approx(0.0, abs=1e-6), "the policy starts as the reference"
    desirable, undesirable = sink.series("eval/rewards/chosen")[-1][1], sink.series("eval/rewards/rejected")[-1][1]
    assert desirable > undesirable and margins[-1] == pytest.approx(desirable - undesirable), margins
    assert sink.series("train/loss")[-1][1] < 0.5, "below 1 - sigmoid(0), the loss of a policy equal to its reference"
    assert not sink.series("eval/perplexity") and "final_eval_perplexity" not in result.summary
    assert result.summary["tokenized_rows"] == 600 and result.summary["truncated_rows"] == 0
    _, held_out = split_records(read_jsonl(assets.feedback_dataset), job.params["eval_split"], job.params["seed"])
    samples = read_jsonl(job.output_dir / "samples.jsonl")
    expected = [row["completion"] if row["label"] else "" for row in held_out[:len(samples)]]
    assert samples and [sample["expected"] for sample in samples] == expected, "an undesirable answer is not expected"
    assert all(row["prompt"] in sample["prompt"] for row, sample in zip(held_out, samples, strict=False))


def test_full_kto_on_preference_pairs_rates_each_pair_s_answers_against_a_frozen_reference(train, assets):
    result, sink, _ = train("full", objective="kto", dataset_path=assets.preference_dataset,
                            dataset_format="preference", max_steps=3, eval_steps=3, learning_rate=1e-3,
                            per_device_train_batch_size=4, max_length=64, generation_eval_rows=0)
    margins = [value for _, value in sink.series("eval/rewards/margins")]
    assert margins[0] == pytest.approx(0.0, abs=1e-6) and margins[-1] != margins[0]
    # Every training batch held both ratings: each logged step has a desirable and an undesirable reward.
    assert len(sink.series("train/rewards/chosen")) == len(sink.series("train/rewards/rejected")) == 3
    assert result.summary["trainable_params"] == result.summary["total_params"]
    # Pairs are split into train and eval whole, then taken apart: 270 train pairs, 30 eval pairs.
    assert result.summary["tokenized_rows"] == 300


def test_kto_takes_pairs_apart_so_that_neighbouring_rows_answer_other_prompts():
    """KTO's trainer reads rows in order and takes each row's KL completion from the row before it in its batch;
    TRL's own unpairing puts every chosen answer first."""
    from tunelab.training.objectives.kto import convert_rows, unpaired_records

    pairs = [{"prompt": f"question {i}", "chosen": f"right {i}", "rejected": f"wrong {i}"} for i in range(7)]
    rows = unpaired_records(convert_rows(pairs, "preference"))
    assert len(rows) == 14 and [row["label"] for row in rows] == [True, False] * 7
    assert sorted(row["completion"][0]["content"] for row in rows) == sorted(
        [f"right {i}" for i in range(7)] + [f"wrong {i}" for i in range(7)])
    for row in rows:
        answer = row["completion"][0]["content"]
        assert answer.split()[1] == row["prompt"][0]["content"].split()[1], "each answer keeps its own prompt"
    assert all(a["prompt"] != b["prompt"] for a, b in zip(rows, rows[1:], strict=False))
    feedback = convert_rows([{"prompt": "2+2", "completion": "5", "label": False}], "feedback")
    assert unpaired_records(feedback) == feedback


def test_kto_needs_two_rows_a_batch_to_estimate_its_kl_term():
    from pydantic import ValidationError

    from tunelab.training.registry import resolve_params

    with pytest.raises(ValidationError, match="per_device_train_batch_size: KTO estimates its KL term"):
        resolve_params("lora", {"per_device_train_batch_size": 1}, "kto")
    assert resolve_params("lora", {"per_device_train_batch_size": 1}, "dpo")["per_device_train_batch_size"] == 1


def test_sft_packing_fills_each_row_with_several_examples(train):
    _, unpacked, _ = train("lora", max_steps=1, eval_split=0, per_device_train_batch_size=2, max_length=128)
    _, packed, _ = train("lora", max_steps=1, eval_split=0, per_device_train_batch_size=2, max_length=128,
                         packing=True)
    tokens = {name: sink.series("train/tokens_seen")[0][1] for name, sink in (("unpacked", unpacked),
                                                                              ("packed", packed))}
    # Two tiny-task examples are ~40 tokens; two packed rows hold as many whole examples as fit in 2 × 128.
    assert tokens["packed"] > 3 * tokens["unpacked"], tokens
    assert tokens["packed"] <= 2 * 128
