"""`tunelab playground --help`'s examples parse with the verb's own flags into a body the API's schema takes, and the
CLI leaves the sampling defaults and bounds to the API."""

import argparse
import shlex

import pytest

from tunelab.commands import add_client_commands
from tunelab.commands.common import CommandError
from tunelab.commands.playground import request_body, terminal_safe
from tunelab.schemas.playground import PlaygroundCreate


def parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tunelab")
    add_client_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_the_help_examples_are_requests_the_api_accepts(capsys):
    from tunelab.cli import main

    with pytest.raises(SystemExit):
        main(["playground", "--help"])
    examples = [line.strip() for line in capsys.readouterr().out.splitlines()
                if line.strip().startswith("tunelab playground ")]
    assert len(examples) == 3
    for example in examples:
        args = parsed(shlex.split(example)[1:])
        body = PlaygroundCreate.model_validate(request_body(args, project_id=1))
        assert body.run_ids == args.run_ids and body.prompt == args.prompt
    sampled = request_body(parsed(shlex.split(examples[1])[1:]), project_id=1)
    assert sampled["include_base"] is True
    assert sampled["sampling"] == {"temperature": 0.7, "seed": 3, "do_sample": True}
    scored = request_body(parsed(shlex.split(examples[2])[1:]), project_id=1)
    assert (scored["reward_run"], scored["completion"]) == (14, "5")


def test_only_the_flags_given_are_sent_and_bounds_are_the_apis():
    body = request_body(parsed(["playground", "7", "--prompt", "hi", "--max-new-tokens", "0"]), project_id=2)
    assert body == {"project_id": 2, "run_ids": [7], "include_base": False, "prompt": "hi",
                    "sampling": {"max_new_tokens": 0}}
    only_scored = request_body(parsed(["playground", "--reward-run", "9", "--prompt", "2+2?", "--completion", "4"]), 2)
    assert only_scored["run_ids"] == [] and PlaygroundCreate.model_validate(only_scored).completion == "4"
    row = request_body(parsed(["playground", "7", "--dataset", "tiny-tasks", "--row", "3"]), 2, dataset_id=5)
    assert row["dataset_row"] == {"dataset_id": 5, "row": 3} and "prompt" not in row


def test_a_sampling_value_without_sample_is_refused_naming_the_flag():
    with pytest.raises(CommandError) as refused:
        request_body(parsed(["playground", "7", "--prompt", "hi", "--top-p", "0.9"]), project_id=1)
    assert refused.value.exit_code == 2 and refused.value.message.startswith("--top-p: takes effect only when sampling")


def test_a_terminal_is_shown_a_models_control_characters_spelled_out():
    assert terminal_safe("\x1b[2J5\tfive\r\nsix\x9b") == "\\x1b[2J5\tfive\\x0d\nsix\\x9b"
