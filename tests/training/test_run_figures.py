"""Figures that make runs comparable: one eval split per dataset whatever the training seed, truncation counted as
TRL cuts, and throughput measured over training steps only."""

import json
import statistics

import pytest

from tunelab.training.engine import run_training
from tunelab.training.models import load_model_and_tokenizer
from tunelab.training.objectives import dpo, kto, simpo
from tunelab.training.objectives.preference import preference_records
from tunelab.training.objectives.sft import convert_rows
from tunelab.training.registry import resolve_params
from tunelab.training.sink import TrainingJob
from tunelab.training.truncation import count_truncation, preference_sequence_lengths, sft_sequence_lengths

from .conftest import RecordingSink, read_jsonl, tiny_defaults
from .trl_reference import (
    long_instruction_rows,
    long_preference_rows,
    trl_cpo_lengths,
    trl_kto_lengths,
    trl_preference_lengths,
    trl_token_lengths,
)


def _run(assets, folder, split_seed=None, dataset_path=None, dataset_format="instruction", objective="sft",
         **params):
    folder.mkdir()
    job = TrainingJob(objective=objective, method="lora", model=str(assets.tiny_model),
                      dataset_path=dataset_path or assets.sample_dataset, dataset_format=dataset_format,
                      params=resolve_params("lora", {**tiny_defaults(objective, "lora"), **params}, objective),
                      output_dir=folder, split_seed=split_seed)
    sink = RecordingSink()
    return run_training(job, sink), sink


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_runs_of_one_dataset_share_its_eval_split_whatever_their_seed(assets, tmp_path):
    sinks = {seed: _run(assets, tmp_path / f"seed-{seed}", split_seed=99, seed=seed, max_steps=2, eval_steps=2)[1]
             for seed in (42, 1234)}
    # LoRA starts as the base model (B = 0), so the step-0 eval loss depends on the eval rows alone.
    step0 = {seed: sink.series("eval/loss")[0] for seed, sink in sinks.items()}
    assert step0[42] == step0[1234]
    assert sinks[42].series("train/loss") != sinks[1234].series("train/loss"), "the seeds still order the data"
    for seed in sinks:
        assert json.loads((tmp_path / f"seed-{seed}" / "config.json").read_text())["split_seed"] == 99
    prompts = [[s["prompt"] for s in read_jsonl(tmp_path / f"seed-{seed}" / "samples.jsonl")] for seed in sinks]
    assert prompts[0] == prompts[1]

    # A run launched before datasets had a split seed keeps splitting by its training seed.
    legacy = {seed: _run(assets, tmp_path / f"legacy-{seed}", seed=seed, max_steps=1, eval_steps=1)[1]
              for seed in (42, 1234)}
    assert legacy[42].series("eval/loss")[0] != legacy[1234].series("eval/loss")[0]


@pytest.mark.parametrize("dataset_format", ["instruction", "chat", "text"])
def test_sequence_lengths_are_the_ones_trl_builds(assets, tmp_path, dataset_format):
    long_rows = long_instruction_rows()
    rows = {
        "instruction": long_rows,
        "chat": [{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": r["input"]},
                               {"role": "assistant", "content": r["output"]}]} for r in long_rows],
        "text": [{"text": r["input"]} for r in long_rows],
    }[dataset_format]
    records = convert_rows(rows, dataset_format)
    _, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))

    assert list(sft_sequence_lengths(records, tokenizer)) == trl_token_lengths(records, assets.tiny_model, tmp_path)


def test_truncation_is_counted_as_trl_cuts_in_the_summary_and_the_log(assets, tmp_path, caplog):
    rows = long_instruction_rows()
    lengths = trl_token_lengths(convert_rows(rows, "instruction"), assets.tiny_model, tmp_path / "trl")
    max_length = (min(lengths) + max(lengths)) // 2
    truncated_rows = sum(length > max_length for length in lengths)
    assert 0 < truncated_rows < len(rows)

    with caplog.at_level("INFO", logger="tunelab.training"):
        result, sink = _run(assets, tmp_path / "run", dataset_path=_write_jsonl(tmp_path / "long.jsonl", rows),
                            max_length=max_length, max_steps=1, eval_split=0.25)

    assert result.summary["tokenized_rows"] == len(rows)
    assert result.summary["truncated_rows"] == truncated_rows
    assert result.summary["truncated_tokens"] == sum(max(0, length - max_length) for length in lengths)
    assert sink.summary["truncated_rows"] == truncated_rows
    assert f"{truncated_rows} of {len(rows)} rows" in caplog.text


def test_preference_pairs_are_counted_as_dpo_cuts_each_sequence(assets, tmp_path):
    rows = long_preference_rows()
    records = dpo.convert_rows(rows, "preference")
    _, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    lengths = trl_preference_lengths(records, assets.tiny_model, tmp_path / "trl")
    assert list(preference_sequence_lengths(records, tokenizer)) == lengths

    chosen = [pair[0] for pair in lengths]
    max_length = (min(chosen) + max(chosen)) // 2
    expected = count_truncation(lengths, max_length)
    assert 0 < expected.truncated_rows < len(rows)
    assert expected.truncated_tokens > sum(max(0, length - max_length) for length in chosen), "rejected ones too"
    result, _ = _run(assets, tmp_path / "run", objective="dpo", dataset_format="preference", max_steps=1,
                     dataset_path=_write_jsonl(tmp_path / "pairs.jsonl", rows), max_length=max_length, eval_split=0)
    assert (result.summary["tokenized_rows"], result.summary["truncated_rows"], result.summary["truncated_tokens"]) \
        == (expected.rows, expected.truncated_rows, expected.truncated_tokens)


def test_simpo_and_kto_count_the_sequences_their_trainers_cut(assets, tmp_path):
    pairs = long_preference_rows()
    records = preference_records(pairs)
    _, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    assert list(simpo.sequence_lengths(records, tokenizer)) == trl_cpo_lengths(records, assets.tiny_model,
                                                                                 tmp_path / "cpo")
    # A template that writes neither the bos nor the eos token: CPOTrainer adds both.
    tokenizer.chat_template = tokenizer.chat_template.replace("{{ bos_token }}", "").replace("{{ eos_token }}", "")
    assert list(simpo.sequence_lengths(records, tokenizer)) == trl_cpo_lengths(
        records, assets.tiny_model, tmp_path / "cpo-bare", tokenizer)
    _, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))

    rated = kto.convert_rows([{"prompt": pair["prompt"], "completion": pair[answer], "label": answer == "chosen"}
                              for pair in pairs for answer in ("chosen", "rejected")], "feedback")
    lengths = trl_kto_lengths(rated, assets.tiny_model, tmp_path / "kto")
    assert list(kto.sequence_lengths(rated, tokenizer)) == lengths
    # Preference pairs are counted as pairs (KTO takes them apart after the split): both answers' sequences a row.
    assert list(kto.sequence_lengths(kto.convert_rows(pairs, "preference"), tokenizer)) == list(
        zip(lengths[::2], lengths[1::2], strict=True))


def test_throughput_counts_training_steps_only(assets, tmp_path):
    # Evaluating 300 rows after every step of 8: evaluations take most of the trainer's runtime.
    result, sink = _run(assets, tmp_path / "run", eval_split=0.5, eval_steps=1, max_steps=6)
    log = read_jsonl(tmp_path / "run" / "trainer_log.jsonl")
    tokens = max(entry["num_tokens"] for entry in log if "loss" in entry)
    over_runtime = tokens / next(entry["train_runtime"] for entry in log if "train_runtime" in entry)

    summary = result.summary["tokens_per_second"]
    assert summary > 3 * over_runtime, "the summary leaves the evaluations' time out"
    per_step = statistics.median(value for _, value in sink.series("train/tokens_per_second"))
    assert per_step / 3 < summary < per_step * 3
