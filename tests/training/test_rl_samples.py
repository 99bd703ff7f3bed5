"""Online RL runs record sample completions with their rewards in rl_samples.jsonl, read from what the trainer kept of
its latest batch."""

import pytest

from tests.training.conftest import read_jsonl
from tunelab.training import rl_samples
from tunelab.training.engine import split_records
from tunelab.training.objectives.online_rl import prompt_records

ONLINE_RL = {"num_generations": 4, "max_completion_length": 6, "learning_rate": 5e-3, "reward_exact_match": 1.0,
             "reward_length": 0.5, "reward_length_target": 3, "generation_eval_rows": 0}


def _normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


def _answers(assets, eval_split: float, seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """(train, eval) answers by prompt text, split as the engine splits the sample dataset."""
    records = prompt_records(read_jsonl(assets.sample_dataset), "instruction", "grpo")
    train, held_out = split_records(records, eval_split, seed)
    return ({r["prompt"][0]["content"]: r["answer"] for r in train},
            {r["prompt"][0]["content"]: r["answer"] for r in held_out})


def _check_scores(rows: list[dict]) -> None:
    for row in rows:
        assert set(row["rewards"]) == {"exact_match", "length"}, row
        exact, length = row["rewards"]["exact_match"], row["rewards"]["length"]
        assert row["reward"] == pytest.approx(1.0 * exact + 0.5 * length, abs=1e-6), row
        assert exact == float(_normalized(row["completion"]) == _normalized(row["expected"])), row
        # −|tokens − 3| / 3 for a completion of 0 to 6 tokens.
        assert any(length == pytest.approx(-abs(k - 3) / 3) for k in range(7)), row
        assert isinstance(row["advantage"], float)
    assert all(isinstance(row["completion"], str) for row in rows)
    assert any(row["completion"].strip() for row in rows), "the policy wrote something"


def test_grpo_records_training_samples_at_spaced_logging_steps_and_its_last_step(train, assets, monkeypatch):
    # 12 rows at most: 3 record points of 4 rows over 6 steps logged each step, so 3 steps apart and the last one.
    monkeypatch.setattr(rl_samples, "MAX_ROWS", 12)
    _, _, job = train("lora", objective="grpo", max_steps=6, eval_split=0, logging_steps=1,
                      per_device_train_batch_size=8, **ONLINE_RL)

    rows = read_jsonl(job.output_dir / "rl_samples.jsonl")
    assert [row["step"] for row in rows] == [1] * 4 + [4] * 4 + [6] * 4
    assert {row["split"] for row in rows} == {"train"}
    answers, _ = _answers(assets, 0, job.params["seed"])
    assert all(row["expected"] == answers[row["prompt"]] for row in rows)
    _check_scores(rows)
    # A batch of 8 holds 2 prompts' groups of 4: a record point shows both.
    assert all(len({row["prompt"] for row in rows if row["step"] == step}) == 2 for step in (1, 4, 6))


def test_rloo_records_the_eval_prompts_completions_at_each_evaluation(train, assets):
    eval_split = 0.001  # 1 prompt: an evaluation adds its 4 completions to a kept batch of 8, after training's
    _, _, job = train("lora", objective="rloo", max_steps=4, eval_split=eval_split, eval_steps=2,
                      per_device_train_batch_size=8, **ONLINE_RL)

    rows = read_jsonl(job.output_dir / "rl_samples.jsonl")
    assert [row["step"] for row in rows] == [0] * 4 + [2] * 4 + [4] * 4
    assert {row["split"] for row in rows} == {"eval"}
    _, held_out = _answers(assets, eval_split, job.params["seed"])
    assert len(held_out) == 1
    assert all(row["expected"] == held_out[row["prompt"]] for row in rows), "eval prompts only"
    _check_scores(rows)


def test_a_resumed_run_keeps_the_rows_of_the_steps_it_does_not_train_again(tmp_path):
    from transformers import TrainerControl, TrainerState

    path = tmp_path / rl_samples.RL_SAMPLES_FILE
    path.write_text("".join(f'{{"step": {step}}}\n' for step in (0, 0, 2, 2, 4, 4)), encoding="utf-8")

    class Trainer:
        eval_dataset = None

    callback = rl_samples.RlSamplesCallback(Trainer(), path, {})
    callback.on_train_begin(None, TrainerState(global_step=2, max_steps=6), TrainerControl())
    assert [row["step"] for row in read_jsonl(path)] == [0, 0, 2, 2]
    assert (callback.rows, callback.last_step) == (4, 2)
    callback.on_train_begin(None, TrainerState(global_step=0, max_steps=6), TrainerControl())
    assert read_jsonl(path) == [] and callback.last_step is None
