"""Warmup in whole steps when a run's length is known: a warmup shorter than one step is none (transformers rounds a
ratio up, and its linear warmup's first step has a learning rate of 0, so a short run's first step learned nothing)."""

import pytest

from tunelab.training.arguments import warmup_steps


@pytest.mark.parametrize(("ratio", "max_steps", "expected"), [
    (0.03, 30, 0), (0.03, 33, 0), (0.03, 34, 1), (0.1, 30, 3), (0.0, 100, 0), (0.03, 1000, 30)])
def test_a_known_length_gets_whole_warmup_steps_rounded_down(ratio, max_steps, expected):
    assert warmup_steps(ratio, max_steps) == expected


def test_a_run_of_epochs_keeps_the_ratio_for_the_trainer_to_resolve():
    assert warmup_steps(0.03, None) == 0.03 and warmup_steps(0.03, 0) == 0.03
