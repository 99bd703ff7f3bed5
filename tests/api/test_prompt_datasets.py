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
