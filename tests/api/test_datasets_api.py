import hashlib
import json
import uuid

import pytest
from sqlalchemy import func, select

from tunelab.core.settings import get_settings
from tunelab.db.models import Dataset
from tunelab.services.accounts.projects import default_project_id
from tunelab.services.catalog import datasets as datasets_service
from tunelab.training.formats import DatasetFormat

URL = "/api/v1/datasets"


def jsonl(rows) -> bytes:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows).encode()


def unique_instruction_rows(count: int) -> list[dict]:
    # A token per test keeps content hashes apart: the database and dataset dir are shared by the whole session.
    token = uuid.uuid4().hex
    return [{"instruction": f"Echo {token}.", "input": str(i), "output": str(i)} for i in range(count)]


def upload(client, data: bytes, filename: str = "train.jsonl", **form):
    return client.post(URL, files={"file": (filename, data, "application/jsonl")}, data=form)


def dataset_count(db_session) -> int:
    return db_session.scalar(select(func.count()).select_from(Dataset))


def stored_files(settings) -> set[str]:
    return {p.name for p in settings.dataset_dir.glob("*")} if settings.dataset_dir.exists() else set()


def test_upload_instruction_jsonl(client, settings):
    data = jsonl(unique_instruction_rows(3))

    response = upload(client, data, filename="my-tasks.jsonl")

    assert response.status_code == 201, response.text
    body = response.json()
    assert body["name"] == "my-tasks"
    assert body["format"] == "instruction"
    assert body["row_count"] == 3
    assert body["size_bytes"] == len(data)
    assert body["content_hash"] == hashlib.sha256(data).hexdigest()
    assert body["bundled"] is False
    assert body["stats"]["chars"]["count"] == 3
    assert (settings.dataset_dir / f"{body['content_hash']}.jsonl").read_bytes() == data


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}, "chat"),
        ({"prompt": "p", "chosen": "good", "rejected": "bad"}, "preference"),
        ({"prompt": "p", "completion": "good", "label": True}, "feedback"),
        ({"text": "plain text"}, "text"),
    ],
)
def test_upload_detects_format(client, row, expected):
    response = upload(client, jsonl([row | {"id": uuid.uuid4().hex}]))

    assert response.status_code == 201, response.text
    assert response.json()["format"] == expected


def test_upload_with_declared_format_and_name(client):
    response = upload(client, jsonl([{"text": uuid.uuid4().hex}]), name="notes", format="text")

    assert response.status_code == 201, response.text
    assert response.json()["name"] == "notes"


def test_same_bytes_same_name_returns_the_existing_dataset_other_name_shares_the_file(client):
    data = jsonl(unique_instruction_rows(2))

    first = upload(client, data, name="a").json()
    again = upload(client, data, name="a").json()
    renamed = upload(client, data, name="b").json()

    assert again["id"] == first["id"]
    assert renamed["id"] != first["id"]
    assert renamed["content_hash"] == first["content_hash"]


@pytest.mark.parametrize(
    ("bad_line", "expected_field", "message_part"),
    [
        ('{"instruction": "broken", "output": ', None, "invalid JSON"),
        ({"instruction": "no answer"}, "output", "Field required"),
    ],
)
def test_invalid_line_17_is_rejected_with_nothing_stored(
    client, db_session, settings, bad_line, expected_field, message_part
):
    rows = unique_instruction_rows(20)
    rows[16] = bad_line
    rows_before, files_before = dataset_count(db_session), stored_files(settings)

    response = upload(client, jsonl(rows))

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "DATASET_INVALID"
    assert error["message"].startswith("line 17: ")
    assert message_part in error["message"]
    assert error["details"]["errors"] == [
        {"line": 17, "field": expected_field, "message": error["details"]["errors"][0]["message"]}
    ]
    assert error["details"]["more_errors"] == 0
    assert dataset_count(db_session) == rows_before
    assert stored_files(settings) == files_before


@pytest.mark.parametrize(("bad_row", "field", "message"), [
    ({"prompt": "p", "completion": "an answer"}, "label", "Field required"),
    ({"prompt": "p", "completion": "an answer", "label": "yes"}, "label", "Input should be a valid boolean"),
    ({"prompt": "p", "label": False}, "completion", "Field required"),
])
def test_a_feedback_upload_missing_a_field_or_with_a_label_not_true_or_false_is_refused_naming_the_line(
    client, db_session, bad_row, field, message
):
    token = uuid.uuid4().hex
    rows = [{"prompt": f"Echo {token} {i}.", "completion": str(i), "label": i % 2 == 0} for i in range(5)]
    rows[3] = bad_row
    rows_before = dataset_count(db_session)

    response = upload(client, jsonl(rows), format="feedback")

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "DATASET_INVALID"
    assert error["message"] == f"line 4: {field}: {message}"
    assert error["details"]["errors"] == [{"line": 4, "field": field, "message": message}]
    assert dataset_count(db_session) == rows_before


def test_empty_upload_is_rejected(client):
    response = upload(client, b"")

    assert response.status_code == 422
    assert response.json()["error"]["message"] == "the file has no rows"


def test_unknown_declared_format_is_a_validation_error(client):
    response = upload(client, jsonl([{"text": "x"}]), format="csv")

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


@pytest.fixture
def upload_limit_64_bytes(app, settings):
    app.dependency_overrides[get_settings] = lambda: settings.model_copy(update={"upload_max_bytes": 64})
    yield
    del app.dependency_overrides[get_settings]


def test_upload_over_the_limit_is_413(client, db_session, settings, upload_limit_64_bytes):
    rows_before, files_before = dataset_count(db_session), stored_files(settings)

    response = upload(client, jsonl(unique_instruction_rows(5)))

    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert "64 bytes" in error["message"]
    assert error["details"] == {"limit_bytes": 64}
    assert dataset_count(db_session) == rows_before
    assert stored_files(settings) == files_before


def test_list_pages_newest_first_and_get_by_id(client):
    ids = [upload(client, jsonl(unique_instruction_rows(1))).json()["id"] for _ in range(3)]

    first_page = client.get(URL, params={"limit": 2}).json()
    second_page = client.get(URL, params={"limit": 2, "cursor": first_page["next_cursor"]}).json()

    assert [d["id"] for d in first_page["data"]] == [ids[2], ids[1]]
    assert second_page["data"][0]["id"] == ids[0]
    assert first_page["count"] == second_page["count"] >= 3
    detail = client.get(f"{URL}/{ids[0]}")
    assert detail.status_code == 200
    assert detail.json() == second_page["data"][0]


def test_list_rejects_a_forged_cursor(client):
    response = client.get(URL, params={"cursor": "abc"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_CURSOR"


def test_unknown_dataset_is_404_in_the_error_shape(client):
    for path in (f"{URL}/999999", f"{URL}/999999/preview"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "DATASET_NOT_FOUND"


def test_preview_without_model_renders_rows_and_character_stats(client):
    rows = unique_instruction_rows(5)
    dataset_id = upload(client, jsonl(rows)).json()["id"]

    response = client.get(f"{URL}/{dataset_id}/preview", params={"limit": 2})

    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["model"] is None and preview["token_stats"] is None
    assert preview["char_stats"]["count"] == 5
    assert len(preview["rows"]) == 2
    first = preview["rows"][0]
    assert first["line"] == 1
    assert first["raw"] == rows[0]
    assert first["prompt"] == f"{rows[0]['instruction']}\n\n0"
    assert first["completion"] == "0"


# ---------------------------------------------------------------- with a tokenizer

CHAT_TEMPLATE = (
    "<s> {% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant> {% endif %}"
)
VOCAB = ["[UNK]", "<s>", "</s>", "<user>", "<assistant>", "<system>", "hello", "world", "how", "are", "you", "fine"]


def save_tiny_tokenizer(directory, chat_template: str | None = CHAT_TEMPLATE):
    """A whitespace word-level tokenizer: one token per word, so expected lengths can be counted by eye."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    word_level = Tokenizer(models.WordLevel({word: i for i, word in enumerate(VOCAB)}, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="[UNK]", bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_tokenizer_dir(settings):
    # Under the models dir: a model given by path must lie under a model root (TUNELAB_MODEL_ROOTS).
    return save_tiny_tokenizer(settings.models_dir / f"tiny-tokenizer-{uuid.uuid4().hex[:8]}")


def test_preview_chat_through_the_chat_template_with_token_stats(client, tiny_tokenizer_dir):
    rows = [
        {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "world"}]},
        {"messages": [{"role": "user", "content": "how are you"}, {"role": "assistant", "content": "fine"}]},
        {"messages": [{"role": "system", "content": "hello"}, {"role": "user", "content": "hello world"},
                      {"role": "assistant", "content": "hello world hello"}]},
    ]
    rows[0]["id"] = uuid.uuid4().hex
    dataset_id = upload(client, jsonl(rows)).json()["id"]

    response = client.get(
        f"{URL}/{dataset_id}/preview", params={"model": str(tiny_tokenizer_dir), "limit": 1, "max_length": 6}
    )

    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["rows"][0]["text"] == "<s> <user> hello <assistant> world "
    # <s>, then a role marker and the words of each message: 5, 7 and 10 tokens
    assert preview["token_stats"] == {
        "count": 3, "min": 5, "mean": 7.3, "p50": 7, "p95": 10, "max": 10, "over_max_length": 2
    }


def test_preview_instruction_splits_prompt_and_completion_at_the_generation_prompt(client, tiny_tokenizer_dir):
    token = uuid.uuid4().hex
    rows = [{"instruction": "hello", "input": "world", "output": "fine", "id": token}]
    dataset_id = upload(client, jsonl(rows)).json()["id"]

    preview = client.get(f"{URL}/{dataset_id}/preview", params={"model": str(tiny_tokenizer_dir)}).json()

    assert preview["rows"][0]["prompt"] == "<s> <user> hello\n\nworld <assistant> "
    assert preview["rows"][0]["completion"] == "fine "
    assert preview["token_stats"]["max"] == 6
    assert preview["token_stats"]["over_max_length"] is None


def test_preview_feedback_shows_each_rating_and_counts_prompt_and_completion_tokens(client, tiny_tokenizer_dir):
    rows = [{"prompt": "hello", "completion": "fine", "label": True, "id": uuid.uuid4().hex},
            {"prompt": "how are you", "completion": "hello world", "label": False}]
    dataset = upload(client, jsonl(rows)).json()
    assert dataset["format"] == "feedback"

    preview = client.get(f"{URL}/{dataset['id']}/preview",
                         params={"model": str(tiny_tokenizer_dir), "max_length": 7}).json()

    assert [(r["prompt"], r["completion"], r["label"]) for r in preview["rows"]] == [
        ("hello", "fine", True), ("how are you", "hello world", False)]
    # <s>, <user> and the prompt's words, <assistant> and the completion's: 5 and 8 tokens
    assert (preview["token_stats"]["min"], preview["token_stats"]["max"]) == (5, 8)
    assert preview["truncation"] == {"max_length": 7, "rows": 2, "truncated_rows": 1, "truncated_tokens": 1}


def test_preview_with_a_model_lacking_a_chat_template_says_so(client, settings):
    model_dir = save_tiny_tokenizer(settings.models_dir / f"no-template-{uuid.uuid4().hex[:8]}", chat_template=None)
    dataset_id = upload(client, jsonl(unique_instruction_rows(1))).json()["id"]

    response = client.get(f"{URL}/{dataset_id}/preview", params={"model": str(model_dir)})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "TOKENIZER_UNAVAILABLE"


def test_preview_with_an_unknown_model_is_422(client, tmp_path):
    dataset_id = upload(client, jsonl(unique_instruction_rows(1))).json()["id"]

    response = client.get(f"{URL}/{dataset_id}/preview", params={"model": str(tmp_path / "missing")})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "MODEL_NOT_FOUND"


# ---------------------------------------------------------------- storage, through the service


def test_a_rolled_back_upload_leaves_no_file(db_session, settings):
    data = jsonl(unique_instruction_rows(2))

    project_id = default_project_id(db_session)
    dataset = datasets_service.create_dataset(db_session, settings, None, "x.jsonl", data, None, project_id)
    stored = datasets_service.dataset_file(settings, dataset)
    assert stored.read_bytes() == data

    db_session.rollback()

    assert not stored.exists()


def test_bundled_dataset_registration_is_idempotent(db_session, settings, tmp_path):
    sample = tmp_path / "sample.jsonl"
    sample.write_bytes(jsonl(unique_instruction_rows(4)))

    first = datasets_service.register_bundled_dataset(db_session, settings, "sample", sample, DatasetFormat.instruction)
    datasets_service.dataset_file(settings, first).unlink()  # a wiped data dir is refilled
    again = datasets_service.register_bundled_dataset(db_session, settings, "sample", sample, DatasetFormat.instruction)

    assert again.id == first.id
    assert first.bundled and first.row_count == 4
    assert datasets_service.dataset_file(settings, again).read_bytes() == sample.read_bytes()


def test_delete_removes_the_dataset_its_file_once_unshared_and_records_it(client, settings):
    data = jsonl(unique_instruction_rows(2))
    first, twin = upload(client, data, name="first").json(), upload(client, data, name="twin").json()
    stored = first["content_hash"]
    assert any(name.startswith(stored) for name in stored_files(settings))

    assert client.delete(f"{URL}/{first['id']}").status_code == 204
    assert client.get(f"{URL}/{first['id']}").json()["error"]["code"] == "DATASET_NOT_FOUND"
    assert any(name.startswith(stored) for name in stored_files(settings)), "the twin still reads the same file"
    assert client.delete(f"{URL}/{twin['id']}").status_code == 204
    assert not any(name.startswith(stored) for name in stored_files(settings))

    events = client.get(f"/api/v1/projects/{first['project_id']}/audit").json()["data"]
    deleted = [event for event in events if event["action"] == "dataset.delete"]
    assert {event["target_id"] for event in deleted} >= {first["id"], twin["id"]}
    assert any("deleted dataset first (2 rows)" in event["summary"] for event in deleted)


def test_a_dataset_that_runs_trained_on_or_a_study_uses_is_not_deleted_and_the_refusal_names_them(client):
    dataset = upload(client, jsonl(unique_instruction_rows(4)), name="in use").json()
    run = client.post("/api/v1/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": dataset["id"],
                                            "queue": "nobody-listens", "name": "uses it"})
    assert run.status_code == 201, run.text

    refused = client.delete(f"{URL}/{dataset['id']}")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "DATASET_IN_USE"
    assert f"1 run ({run.json()['id']} 'uses it')" in error["message"] and "delete them first" in error["message"]
    assert client.get(f"{URL}/{dataset['id']}").status_code == 200, "nothing was deleted"

    client.post(f"/api/v1/runs/{run.json()['id']}/cancel")
    assert client.delete(f"/api/v1/runs/{run.json()['id']}").status_code == 204
    study = client.post("/api/v1/studies", json={
        "name": "on it", "model": "tunelab-tiny", "dataset_id": dataset["id"], "methods": ["lora"],
        "budget": {"max_steps": 2}, "queue": "nobody-listens"})
    assert study.status_code == 201, study.text
    for study_run in study.json()["runs"]:
        client.post(f"/api/v1/runs/{study_run['id']}/cancel")
        client.delete(f"/api/v1/runs/{study_run['id']}")
    error = client.delete(f"{URL}/{dataset['id']}").json()["error"]
    assert error["code"] == "DATASET_IN_USE" and f"1 study ({study.json()['study']['id']} 'on it')" in error["message"]


def test_the_bundled_samples_are_not_deleted(client):
    sample = next(d for d in client.get(URL, params={"limit": 100}).json()["data"] if d["bundled"])
    refused = client.delete(f"{URL}/{sample['id']}")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "DATASET_BUNDLED"
    assert client.get(f"{URL}/{sample['id']}").status_code == 200
