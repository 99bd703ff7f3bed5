"""The estimate's step cost: a fixed part (the optimizer's update) and a part per token, told apart by earlier runs
whose tokens per step differ — full fine-tuning of SmolLM2 trained 95 tokens/s on short rows and 130 on long ones, so
the median throughput put a long-row run at 1.32× its time."""

import pytest

from tunelab.training.estimator import StepCost, fit_step_cost


def test_runs_of_short_and_long_rows_give_the_fixed_part_and_the_rate():
    # 0.7 s per step whatever its tokens, plus 1/158 s per token (measured on SmolLM2, full, 2 cores).
    def seconds(tokens: float) -> float:
        return 0.7 + tokens / 158

    cost = fit_step_cost([(183, seconds(183)), (512, seconds(512)), (185, seconds(185))], [95.0, 130.0, 96.0])

    assert cost is not None
    assert cost.fixed_seconds == pytest.approx(0.7) and cost.seconds_per_token == pytest.approx(1 / 158)
    assert cost.seconds(steps=6, tokens=6 * 512) == pytest.approx(6 * seconds(512))


def test_without_a_spread_of_tokens_per_step_the_median_throughput_stands():
    cost = fit_step_cost([(180, 1.8), (190, 1.7), (185, 2.0)], [100.0, 111.7, 92.5])

    assert cost == StepCost(fixed_seconds=0.0, seconds_per_token=1 / 100.0)


def test_a_line_that_is_no_cost_falls_back_to_the_median():
    # Longer steps per token on short rows than on long ones would make the fixed part negative: noise, not a cost.
    cost = fit_step_cost([(100, 0.5), (400, 4.0)], [200.0, 100.0])

    assert cost == StepCost(fixed_seconds=0.0, seconds_per_token=1 / 150.0)


def test_earlier_runs_that_only_recorded_a_throughput_still_count_and_none_gives_none():
    assert fit_step_cost([], [200.0]) == StepCost(fixed_seconds=0.0, seconds_per_token=1 / 200.0)
    assert fit_step_cost([], []) is None
