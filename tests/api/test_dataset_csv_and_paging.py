"""CSV uploads (a header row naming the fields, a chat row's messages as a JSON cell), stored as the JSONL they
convert to with the validation, hash and stats of a JSONL upload; and the preview paging through every row."""

import csv
import hashlib
import io
import json
import uuid

from tests.api.test_datasets_api import URL, jsonl, unique_instruction_rows, upload


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def test_a_csv_upload_is_stored_as_the_jsonl_of_its_rows(client, settings):
    rows = unique_instruction_rows(3)
    rows[1]["output"] = 'two lines,\nand "quotes"'  # a quoted cell spanning lines is one cell
    data = csv_bytes(["instruction", "input", "output"], [[r["instruction"], r["input"], r["output"]] for r in rows])

    response = upload(client, data, filename="train.csv")

    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["format"] == "instruction" and dataset["row_count"] == 3 and dataset["name"] == "train"
    stored = (settings.dataset_dir / f"{dataset['content_hash']}.jsonl").read_bytes()
    assert [json.loads(line) for line in stored.splitlines()] == rows
    assert dataset["content_hash"] == hashlib.sha256(stored).hexdigest()
    # The same rows uploaded as JSONL are the same stored content, with the same stats.
    as_jsonl = upload(client, jsonl(rows), filename="other.jsonl").json()
    assert as_jsonl["content_hash"] == dataset["content_hash"]
    assert as_jsonl["stats"] == dataset["stats"]


def test_a_csv_chat_row_holds_its_messages_as_json(client):
    messages = [{"role": "user", "content": f"hi {uuid.uuid4().hex}"}, {"role": "assistant", "content": "hello"}]
    data = csv_bytes(["messages"], [[json.dumps(messages)]])

    response = upload(client, data, filename="chat.CSV")

    assert response.status_code == 201, response.text
    assert response.json()["format"] == "chat"
    preview = client.get(f"{URL}/{response.json()['id']}/preview").json()
    assert preview["rows"][0]["raw"] == {"messages": messages}


def test_a_csv_feedback_row_s_label_cell_is_true_or_false(client, settings):
    token = uuid.uuid4().hex
    data = csv_bytes(["prompt", "completion", "label"], [[f"say {token}", "hi", "true"], ["say it", "no", " FALSE"]])

    response = upload(client, data, filename="ratings.csv")

    assert response.status_code == 201, response.text
    assert response.json()["format"] == "feedback"
    stored = (settings.dataset_dir / f"{response.json()['content_hash']}.jsonl").read_bytes()
    assert [json.loads(line)["label"] for line in stored.splitlines()] == [True, False]

    refused = upload(client, csv_bytes(["prompt", "completion", "label"], [[f"say {token}", "hi", "true"],
                                                                          ["say it", "no", "maybe"]]),
                     filename="ratings.csv").json()["error"]
    assert refused["details"]["errors"] == [{"line": 3, "field": "label", "message": "Input should be a valid boolean"}]


def test_csv_errors_name_the_line_and_the_column(client):
    token = uuid.uuid4().hex
    data = (f"messages,source\n"
            f'"[{{""role"": ""user"", ""content"": ""{token}""}}]",a\n'
            f'"[{{""role"": ""user"", ""content"": ""x""}}, {{""role"": ""robot"", ""content"": ""y""}}]",b\n'
            f"\n"
            f"not json,c\n"
            f"only one cell\n").encode()

    response = upload(client, data, filename="chat.csv")

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "DATASET_INVALID"
    errors = error["details"]["errors"]
    assert [(e["line"], e["field"]) for e in errors] == [(3, "messages.1.role"), (5, "messages"), (6, None)]
    assert "JSON" in errors[1]["message"] and "1 cells where the header row has 2 columns" == errors[2]["message"]
    assert error["message"].startswith("line 3: messages.1.role: ")


def test_a_csv_without_rows_or_with_a_nameless_column_is_refused(client):
    assert upload(client, b"text\n", filename="empty.csv").json()["error"]["message"] == "the file has no rows"
    nameless = upload(client, f"text,\n{uuid.uuid4().hex},x\n".encode(), filename="nameless.csv").json()["error"]
    assert nameless["details"]["errors"][0] == {"line": 1, "field": None,
                                                "message": "column 2 of the header row has no name"}


def test_the_preview_pages_through_every_row(client):
    rows = unique_instruction_rows(25)
    dataset_id = upload(client, jsonl(rows)).json()["id"]

    pages = [client.get(f"{URL}/{dataset_id}/preview", params={"limit": 10, "offset": offset}).json()
             for offset in (0, 10, 20)]

    assert [page["offset"] for page in pages] == [0, 10, 20]
    assert {page["total_rows"] for page in pages} == {25}
    assert [row["line"] for page in pages for row in page["rows"]] == list(range(1, 26))
    assert [row["raw"] for page in pages for row in page["rows"]] == rows
    past_the_end = client.get(f"{URL}/{dataset_id}/preview", params={"offset": 25}).json()
    assert past_the_end["rows"] == [] and past_the_end["total_rows"] == 25
    assert client.get(f"{URL}/{dataset_id}/preview", params={"offset": -1}).status_code == 422
