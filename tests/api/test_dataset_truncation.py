"""The dataset preview counts what a max_length cuts, as TRL cuts it; a dataset's split seed goes with every run."""

import json
import uuid

from tests.training.trl_reference import (
    long_instruction_rows,
    long_preference_rows,
    trl_preference_lengths,
    trl_token_lengths,
)
from tunelab.training.objectives import dpo
from tunelab.training.objectives.sft import convert_rows

URL = "/api/v1/datasets"


def _upload(client, rows) -> dict:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    response = client.post(URL, files={"file": ("long.jsonl", data, "application/jsonl")})
    assert response.status_code == 201, response.text
    return response.json()


def test_preview_counts_the_rows_and_tokens_max_length_cuts(client, assets, settings, tmp_path):
    token = uuid.uuid4().hex  # keeps this upload's bytes apart from other tests'
    rows = [{**row, "id": token} for row in long_instruction_rows()]
    dataset = _upload(client, rows)
    lengths = trl_token_lengths(convert_rows(rows, "instruction"), settings.models_dir / "tunelab-tiny", tmp_path)
    max_length = (min(lengths) + max(lengths)) // 2

    response = client.get(f"{URL}/{dataset['id']}/preview",
                          params={"model": "tunelab-tiny", "max_length": max_length, "limit": 1})

    assert response.status_code == 200, response.text
    assert response.json()["truncation"] == {
        "max_length": max_length,
        "rows": len(rows),
        "truncated_rows": sum(length > max_length for length in lengths),
        "truncated_tokens": sum(max(0, length - max_length) for length in lengths),
    }
    without_length = client.get(f"{URL}/{dataset['id']}/preview", params={"model": "tunelab-tiny"}).json()
    assert without_length["truncation"] is None


def test_preview_counts_both_sequences_of_a_preference_pair(client, assets, settings, tmp_path):
    token = uuid.uuid4().hex
    rows = [{**row, "id": token} for row in long_preference_rows()]
    dataset = _upload(client, rows)
    lengths = trl_preference_lengths(dpo.convert_rows(rows, "preference"), settings.models_dir / "tunelab-tiny",
                                     tmp_path)
    max_length = (min(min(pair) for pair in lengths) + max(max(pair) for pair in lengths)) // 2

    preview = client.get(f"{URL}/{dataset['id']}/preview",
                         params={"model": "tunelab-tiny", "max_length": max_length, "limit": 1}).json()

    assert preview["truncation"]["truncated_rows"] == sum(max(pair) > max_length for pair in lengths)
    assert preview["truncation"]["truncated_tokens"] == sum(max(0, n - max_length) for pair in lengths for n in pair)
    assert preview["token_stats"]["max"] == max(max(pair) for pair in lengths)


def test_a_run_records_its_datasets_split_seed(client, assets):
    dataset = _upload(client, [{"text": f"note {uuid.uuid4().hex}"} for _ in range(4)])
    assert isinstance(dataset["split_seed"], int)
    runs = [client.post("/api/v1/runs", json={"method": "lora", "model": "tunelab-tiny", "dataset": dataset["id"],
                                              "params": {"seed": seed, "max_steps": 1}}).json() for seed in (1, 2)]
    for run in runs:
        config = client.get(f"/api/v1/runs/{run['id']}").json()["config"]
        assert config["dataset"]["split_seed"] == dataset["split_seed"]
        client.delete(f"/api/v1/runs/{run['id']}")
