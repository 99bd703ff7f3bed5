"""Prompt datasets, which online RL (GRPO, RLOO) samples its own answers for: a prompt and, for the match rewards, the
expected answer. Detected, validated naming the line, and previewed as the policy sees each prompt."""

import uuid

import pytest

from tests.api.test_datasets_api import URL, jsonl, save_tiny_tokenizer, upload


@pytest.fixture(scope="module")
def tokenizer_dir(settings):
    # Under the models dir: a model given by path must lie under a model root (TUNELAB_MODEL_ROOTS).
    return save_tiny_tokenizer(settings.models_dir / f"tiny-tokenizer-{uuid.uuid4().hex[:8]}")


def test_a_prompt_dataset_is_detected_and_previewed_with_each_prompts_tokens(client, tokenizer_dir):
    rows = [{"prompt": "hello", "answer": 4, "id": uuid.uuid4().hex}, {"prompt": "how are you"}]
    response = upload(client, jsonl(rows))
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["format"] == "prompt" and dataset["row_count"] == 2

    preview = client.get(f"{URL}/{dataset['id']}/preview", params={"model": str(tokenizer_dir)}).json()
    assert [(r["prompt"], r["completion"]) for r in preview["rows"]] == [("hello", "4"), ("how are you", None)]
    # <s>, <user> and the prompt's words, then the generation prompt <assistant>: what the policy continues
    assert (preview["token_stats"]["min"], preview["token_stats"]["max"]) == (4, 6)


def test_a_prompt_row_without_a_prompt_is_refused_naming_the_line(client):
    rows = [{"prompt": "a", "answer": "1"}, {"prompt": "b"}, {"prompt": "", "answer": "3"}]
    response = upload(client, jsonl([*rows[:2], {"prompt": "c", "answer": ["x"]}, rows[2]]), format="prompt")
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "DATASET_INVALID" and error["message"].startswith("line 3: answer: ")
    assert "should be text or a number" in error["message"]
    assert [(e["line"], e["field"]) for e in error["details"]["errors"]] == [(3, "answer"),
                                                                                           (4, "prompt")], error


def test_a_feedback_file_whose_first_row_lacks_its_label_is_feedback_with_the_label_named(client):
    """A prompt and a completion are a rated answer (KTO's feedback), even when the first row lost its label: the
    upload is refused naming that line's label, not stored as prompts whose completions would go unused."""
    rows = [{"prompt": "2+2?", "completion": "4"}, {"prompt": "2+3?", "completion": "6", "label": False}]
    response = upload(client, jsonl(rows))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["message"].startswith("line 1: label: "), error
    fixed = upload(client, jsonl([{**rows[0], "label": True}, rows[1]]))
    assert fixed.status_code == 201 and fixed.json()["format"] == "feedback", fixed.text
