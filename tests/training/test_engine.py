"""The engine on the bundled tiny model: metrics, artifacts, summary, and that saved results reload exactly."""

import json
import random

import pytest
import torch

from .conftest import read_jsonl

TRAIN_KEYS = {
    "train/loss",
    "train/learning_rate",
    "train/grad_norm",
    "train/tokens_per_second",
    "train/epoch",
    "train/mean_token_accuracy",
}
SUMMARY_KEYS = {
    "trainable_params",
    "total_params",
    "peak_memory_bytes",
    "wall_time_s",
    "tokens_per_second",
    "final_eval_loss",
    "best_eval_loss",
}


def test_lora_trains_reports_and_its_adapter_reloads_exactly(train, assets):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    result, sink, job = train("lora", max_steps=4, eval_steps=2)

    assert not result.canceled
    assert 0 < result.summary["trainable_params"] < result.summary["total_params"]
    assert SUMMARY_KEYS <= set(sink.summary) and sink.summary == result.summary
    assert result.summary["peak_memory_bytes"] > 0 and result.summary["tokens_per_second"] > 0
    # The runtime's own memory, before any data or model: the part of the peak no method changes.
    assert 0 < result.summary["runtime_rss_bytes"] < result.summary["process_peak_rss_bytes"]
    train_steps = [step for step, values, _ in sink.metrics if "train/loss" in values]
    assert train_steps == [1, 2, 3, 4]
    # What the throughput is measured on, for the estimate's step cost: the 4 logged steps, their tokens and time.
    summary = result.summary
    assert summary["train_steps_timed"] == 4
    assert summary["train_tokens_timed"] == sink.series("train/tokens_seen")[-1][1]
    assert summary["tokens_per_second"] == pytest.approx(summary["train_tokens_timed"] / summary["train_seconds_timed"])
    assert all(TRAIN_KEYS <= set(values) for _, values, _ in sink.metrics if "train/loss" in values)
    assert [step for step, _ in sink.series("eval/loss")] == [0, 2, 4]
    assert all(v == pytest.approx(torch.tensor(loss).exp().item()) for (_, v), (_, loss) in
               zip(sink.series("eval/perplexity"), sink.series("eval/loss")))
    assert sink.progress_calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sink.flushes >= 1
    # What the process was doing where the step count stood still (minutes each on a real model), as (phase, step).
    assert sink.phases == [("loading_data", 0), ("loading_model", 0), ("evaluating", 0), ("training", 0),
                           ("evaluating", 2), ("training", 2), ("evaluating", 4), ("saving", 4), ("generating", 4)]

    out = job.output_dir
    assert (out / "adapter" / "adapter_config.json").exists() and not (out / "model").exists()
    assert (out / "tokenizer" / "tokenizer.json").exists()
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "lora" and config["params"] == job.params and "trl" in config["versions"]
    # What the trainer resolved is recorded: 3 % of 4 steps is no warmup (rounded up, it was one step at lr 0).
    resolved = config["resolved"]
    assert resolved["warmup_steps"] == 0 and resolved["total_steps"] == 4
    assert resolved["optimizer"].startswith("adamw") and resolved["per_device_eval_batch_size"] >= 1
    assert any("loss" in entry for entry in read_jsonl(out / "trainer_log.jsonl"))

    samples = read_jsonl(out / "samples.jsonl")
    assert 2 <= len(samples) <= 3
    # The eval rows picked again from the recorded rule and split seed alone: the samples are the first of them.
    rows = read_jsonl(assets.sample_dataset)
    count = min(len(rows) - 1, max(1, round(len(rows) * config["params"]["eval_split"])))
    eval_rows = [rows[i] for i in sorted(random.Random(config["split_seed"]).sample(range(len(rows)), count))]
    assert "random.Random(split_seed).sample" in resolved["eval_split_rule"]
    assert [s["expected"] for s in samples] == [row["output"] for row in eval_rows[:len(samples)]]
    reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(assets.tiny_model), out / "adapter")
    reloaded.eval()
    for sample in samples:
        assert len(sample["logits"]) == 16 and isinstance(sample["completion"], str)
        with torch.no_grad():
            logits = reloaded(input_ids=torch.tensor([sample["prompt_token_ids"]])).logits[0, -1, :16]
        assert torch.allclose(logits, torch.tensor(sample["logits"]), atol=1e-5, rtol=0)
    assert [s["base_completion"] for s in samples] == base_completions(assets.tiny_model, samples)


def base_completions(model_dir, samples: list[dict]) -> list[str]:
    """The untrained model's greedy completions of the samples' prompts, as samples.jsonl's base_completion."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir).eval(), AutoTokenizer.from_pretrained(model_dir)
    completions = []
    for sample in samples:
        with torch.no_grad():
            generated = base.generate(input_ids=torch.tensor([sample["prompt_token_ids"]]), max_new_tokens=8,
                                      do_sample=False, pad_token_id=tokenizer.pad_token_id)
        completions.append(tokenizer.decode(generated[0, len(sample["prompt_token_ids"]):], skip_special_tokens=True))
    return completions


def test_full_sft_learns_the_sample_dataset(train, assets):
    """Default full SFT (60 steps) cuts the eval loss of the random tiny model by at least 30 %."""
    from transformers import AutoModelForCausalLM

    result, sink, job = train("full")

    eval_losses = [loss for _, loss in sink.series("eval/loss")]
    drop = 1 - eval_losses[-1] / eval_losses[0]
    print(f"full SFT eval loss {eval_losses[0]:.3f} -> {eval_losses[-1]:.3f} ({drop:.0%} lower) "
          f"in {result.summary['wall_time_s']:.1f} s")
    assert drop >= 0.30
    assert result.summary["final_eval_loss"] == eval_losses[-1]
    assert result.summary["best_eval_loss"] == min(eval_losses)
    assert result.summary["trainable_params"] == result.summary["total_params"]

    model_dir = job.output_dir / "model"
    assert not (job.output_dir / "adapter").exists()
    reloaded = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    samples = read_jsonl(job.output_dir / "samples.jsonl")
    sample = samples[0]
    with torch.no_grad():
        logits = reloaded(input_ids=torch.tensor([sample["prompt_token_ids"]])).logits[0, -1, :16]
    assert torch.allclose(logits, torch.tensor(sample["logits"]), atol=1e-5, rtol=0)
    assert [s["base_completion"] for s in samples] == base_completions(assets.tiny_model, samples)
    assert [s["base_completion"] for s in samples] != [s["completion"] for s in samples], "60 steps change answers"


def test_cancel_stops_within_one_step_and_keeps_artifacts(train):
    from .conftest import RecordingSink

    result, sink, job = train("lora", sink=RecordingSink(cancel_after_step=3), max_steps=30)

    assert result.canceled
    assert sink.progress_calls[-1][0] <= 4
    assert max(step for step, _ in sink.series("train/loss")) <= 4
    assert (job.output_dir / "adapter" / "adapter_config.json").exists()
    assert "final_eval_loss" in result.summary


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_chat_rows_train_on_the_assistant_turns(train, assets, tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": r["instruction"] + " " + r["input"]},
                      {"role": "assistant", "content": r["output"]}]}
        for r in read_jsonl(assets.sample_dataset)[:40]
    ]
    result, sink, _ = train("lora", dataset_path=_write_jsonl(tmp_path / "chat.jsonl", rows),
                            dataset_format="chat", max_steps=2)
    assert len(sink.series("train/loss")) == 2 and "final_eval_loss" in result.summary


def test_text_rows_train_on_every_token(train, assets, tmp_path):
    rows = [{"text": f"{r['instruction']} {r['input']} {r['output']}"} for r in read_jsonl(assets.sample_dataset)[:40]]
    result, sink, _ = train("full", dataset_path=_write_jsonl(tmp_path / "text.jsonl", rows),
                            dataset_format="text", max_steps=2, eval_split=0)
    assert len(sink.series("train/loss")) == 2
    assert "final_eval_loss" not in result.summary and not sink.series("eval/loss")


def test_unsupported_dataset_format_is_a_clear_error(train, assets):
    with pytest.raises(ValueError, match="'sft' objective takes .* not 'preference'"):
        train("lora", dataset_format="preference", max_steps=1)


def test_half_precision_without_gpu_is_a_clear_error(train):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: bf16 is valid here")
    with pytest.raises(ValueError, match="bf16 needs a CUDA GPU"):
        train("lora", precision="bf16", max_steps=1)


@pytest.mark.requires_gpu
def test_bf16_lora_on_gpu_reports_cuda_peak_memory(train):
    result, sink, _ = train("lora", precision="bf16", max_steps=3)
    assert len(sink.series("train/loss")) == 3
    assert result.summary["peak_memory_bytes"] == torch.cuda.max_memory_allocated() > 0
