"""A study's runs train through the real Celery worker, and its cost table reads what they measured."""

from tests.conftest import wait_while_progressing
from tests.worker.conftest import FINISHED, TINY_MODEL, run_progress

STEPS = 4


def test_a_two_method_study_trains_and_fills_its_cost_table(api, worker, sample_dataset):
    body = {"name": "worker study", "model": TINY_MODEL, "dataset_id": sample_dataset["id"],
            "methods": ["lora", "ia3"], "seeds": [5], "budget": {"max_steps": STEPS},
            "params": {"max_length": 64, "per_device_train_batch_size": 2, "eval_split": 0.2, "eval_steps": 2}}
    created = api.post("/studies", json=body)
    assert created.status_code == 201, created.text
    study_id = created.json()["study"]["id"]

    def read():
        return api.get(f"/studies/{study_id}").json()

    detail = wait_while_progressing(read, lambda d: all(r["status"] in FINISHED for r in d["runs"]),
                                    lambda d: tuple(run_progress(r) for r in d["runs"]), message="the study's runs")
    assert [r["status"] for r in detail["runs"]] == ["succeeded", "succeeded"], [r["status_reason"] for r in
                                                                                   detail["runs"]]
    assert {r["config"]["params"]["max_steps"] for r in detail["runs"]} == {STEPS}
    assert detail["study"]["status_counts"] == {"succeeded": 2}
    table = detail["cost_table"]
    rows = {row["cell"]: row for row in table["rows"]}
    assert set(rows) == {"lora", "ia3"}
    for row in rows.values():
        for key in ("seconds_per_1k_tokens", "trainable_percent", "model_state_bytes", "best_eval_loss",
                    "tokens_to_target"):
            assert row["values"][key] is not None and row["values"][key]["n"] == 1, (row["cell"], key)
    # The target is the worse cell's best loss: that cell reaches it at its best step, the other no later.
    assert table["target_loss"] == max(row["values"]["best_eval_loss"]["mean"] for row in rows.values())
    assert all(column["ranked"] for column in table["columns"])
    # IA3 trains far fewer parameters than LoRA: that difference is a count, not noise.
    assert "trainable_percent" in rows["ia3"]["best"]
