"""Online RL's declared rewards (GRPO, RLOO): each component scores as its description says, a user's pattern cannot
stall a run, and params that would train on no reward or on rows without answers are refused before any training."""

import pytest
from pydantic import ValidationError

from tunelab.training.objectives import online_rl
from tunelab.training.registry import params_model


def _completions(*texts: str) -> list[list[dict[str, str]]]:
    return [[{"role": "assistant", "content": text}] for text in texts]


def test_exact_match_ignores_case_and_surrounding_space_only():
    scores = online_rl.exact_match(_completions(" Paris\n", "paris is it", "PARIS"), ["Paris", "Paris", "paris"])
    assert scores == [1.0, 0.0, 1.0]


def test_numeric_match_compares_the_last_number_of_the_completion_with_the_answer():
    completions = _completions("3 + 4 = 7", "The answer is 1,250.0", "seven", "7 or 8")
    assert online_rl.numeric_match(completions, ["7", "1250", "7", "7"]) == [1.0, 1.0, 0.0, 0.0]
    assert online_rl.numeric_match(_completions("42"), [None]) == [0.0]


def test_the_format_reward_matches_the_whole_completion_across_lines_and_gives_up_on_a_runaway_pattern():
    reward = online_rl.format_reward(r"<think>.*</think>\s*\d+")
    assert reward(_completions("<think>a\nb</think> 12", "12 <think>x</think>", "<think>x</think> 1 extra")) == [
        1.0, 0.0, 0.0]
    assert reward.__name__ == "format"  # logged as rewards/format/mean
    runaway = online_rl.format_reward(r"(a+)+$")  # catastrophic backtracking on a near-match
    assert runaway(_completions("a" * 40 + "b")) == [0.0]


def test_the_length_penalty_is_the_distance_to_the_target_over_the_target():
    reward = online_rl.length_reward(4)
    assert reward(_completions("", "", ""), completion_ids=[[1, 2, 3, 4], [1, 2], [1] * 8]) == [0.0, -0.5, -1.0]


def test_prompt_and_instruction_rows_become_prompts_with_their_answers():
    prompt_rows = online_rl.prompt_records([{"prompt": "2+2?", "answer": 4}, {"prompt": "Hi"}], "prompt", "grpo")
    assert prompt_rows == [{"prompt": [{"role": "user", "content": "2+2?"}], "answer": "4"},
                           {"prompt": [{"role": "user", "content": "Hi"}], "answer": None}]
    instruction = online_rl.prompt_records([{"instruction": "Add", "input": "2 2", "output": "4"}], "instruction",
                                           "rloo")
    assert instruction[0]["answer"] == "4" and "Add" in instruction[0]["prompt"][0]["content"]
    with pytest.raises(ValueError, match="the rloo objective takes prompt or instruction datasets, not 'preference'"):
        online_rl.prompt_records([], "preference", "rloo")


def test_rows_without_an_answer_are_refused_when_a_match_reward_is_on():
    params = params_model("grpo", "lora").model_validate({})
    records = [{"prompt": [], "answer": "1"}, {"prompt": [], "answer": None}]
    with pytest.raises(ValueError, match="reward_exact_match: 1 of 2 rows have no answer"):
        online_rl.check_answers(records, params)
    online_rl.check_answers(records, params_model("grpo", "lora").model_validate(
        {"reward_exact_match": 0, "reward_length": 1, "reward_length_target": 8}))


@pytest.mark.parametrize(("params", "message"), [
    ({"reward_exact_match": 0}, "no reward is on"),
    ({"reward_format": 1}, "a format reward needs reward_format_pattern"),
    ({"reward_length": 1}, "a length penalty needs reward_length_target"),
    ({"reward_format_pattern": "(unclosed"}, "not a regular expression"),
    ({"num_generations": 3, "per_device_train_batch_size": 4}, "a group of 3 does not divide the batch of 4"),
])
def test_params_that_cannot_train_are_refused_naming_the_field(params, message):
    for objective in ("grpo", "rloo"):
        with pytest.raises(ValidationError, match=message):
            params_model(objective, "lora").model_validate(params)


def test_the_declared_rewards_and_their_weights():
    params = params_model("grpo", "lora").model_validate(
        {"reward_exact_match": 0, "reward_numeric_match": 2, "reward_format_pattern": "x", "reward_format": 0.5,
         "reward_model_run": 7, "reward_model": 3})
    assert online_rl.reward_weights(params) == {"numeric_match": 2, "format": 0.5, "reward_model": 3}
