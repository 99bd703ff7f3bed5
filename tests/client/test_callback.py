"""A real transformers Trainer with TunelabCallback against a real `tunelab api`: the bundled tiny model trains a few
steps on CPU; the run gets every step's loss, lr and grad norm, the evaluations, throughput and the resolved
TrainingArguments, and ends succeeded. An exception in train() ends it failed through the callback's context."""

import pytest

from tunelab.assets.build import TINY_MODEL_NAME

STEPS = 4


@pytest.fixture(autouse=True)
def private_spool(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNELAB_CONFIG", str(tmp_path / "no-config.json"))


def _trainer(assets, tmp_path, callback, **args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

    model_dir = assets.models_dir / TINY_MODEL_NAME
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    texts = [f"step {n}: the quick brown fox jumps over the lazy dog {n}" for n in range(12)]
    rows = [{"input_ids": ids, "labels": ids} for ids in (tokenizer(t)["input_ids"][:24] for t in texts)]
    training_args = TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=STEPS, per_device_train_batch_size=1, logging_steps=1,
        eval_strategy="steps", eval_steps=2, per_device_eval_batch_size=1, learning_rate=1e-3, report_to="none",
        save_strategy="no", use_cpu=True, seed=7, run_name="tiny callback", **args)
    return Trainer(model=model, args=training_args, train_dataset=rows[:8], eval_dataset=rows[8:],
                   callbacks=[callback])


def _series(api, run_id: int) -> dict[str, list[int]]:
    response = api.get(f"/runs/{run_id}/metrics")
    assert response.status_code == 200, response.text
    return {series["key"]: series["step"] for series in response.json()["series"]}


def test_a_trainer_with_the_callback_logs_every_step_and_ends_succeeded(api_server, api, admin_token, assets,
                                                                        tmp_path):
    from tunelab.client.callback import TunelabCallback

    callback = TunelabCallback(url=api_server, token=admin_token, config={"dataset": "fox sentences"})
    _trainer(assets, tmp_path, callback).train()

    run = api.get(f"/runs/{callback.run.id}").json()
    assert run["status"] == "succeeded" and run["external"], run
    assert run["name"] == "tiny callback" and run["model"].endswith(TINY_MODEL_NAME) and run["method"] == "full"
    params = run["config"]["params"]
    assert params["max_steps"] == STEPS and params["learning_rate"] == 1e-3 and params["dataset"] == "fox sentences"
    every_step = list(range(1, STEPS + 1))
    series = _series(api, run["id"])
    for key in ("train/loss", "train/learning_rate", "train/grad_norm", "train/epoch"):
        assert series[key] == every_step, (key, series)
    assert series["train/samples_per_second"] == every_step
    assert series["eval/loss"] == [2, 4] and series["eval/runtime"] == [2, 4]
    assert series["train/mean_loss"] == [STEPS]
    assert run["final_eval_loss"] is not None and run["wall_time_s"] > 0


def test_train_raising_inside_the_callback_context_ends_the_run_failed(api_server, api, admin_token, assets,
                                                                       tmp_path):
    from transformers import TrainerCallback

    from tunelab.client.callback import TunelabCallback

    class Explode(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise RuntimeError("out of memory at step 2")

    callback = TunelabCallback(url=api_server, token=admin_token)
    trainer = _trainer(assets, tmp_path, callback, eval_on_start=False)
    trainer.add_callback(Explode())
    with pytest.raises(RuntimeError), callback:
        trainer.train()

    run = api.get(f"/runs/{callback.run.id}").json()
    assert run["status"] == "failed" and run["status_reason"] == "RuntimeError: out of memory at step 2"
    assert _series(api, run["id"])["train/loss"][:1] == [1]
