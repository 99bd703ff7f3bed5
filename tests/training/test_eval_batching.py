"""Eval figures do not depend on the eval batch size: each is a token-weighted mean over the whole held-out split.

One batch holding the whole split gives that mean by definition; every smaller batching must give the same figure.
Before, the loop averaged per-batch means (at batch 1: the mean of each row's own mean), so rows of different
lengths moved the figure with the batch size.
"""

import pytest

from tests.training.conftest import read_jsonl, tiny_defaults
from tunelab.training.models import load_model_and_tokenizer
from tunelab.training.registry import TrainerInputs, get_method, get_objective, params_model, resolve_params

EVAL_ROWS = 12


def _trainer(assets, tmp_path, objective_name: str, dataset_format: str):
    objective, method = get_objective(objective_name), get_method("full")
    dataset = assets.sample_dataset if dataset_format == "instruction" else assets.text_dataset
    records = objective.convert_rows(read_jsonl(dataset), dataset_format)[:EVAL_ROWS]
    params = params_model(objective.name, method.name).model_validate(
        resolve_params("full", {**tiny_defaults(objective_name, "full"), "per_device_train_batch_size": 1},
                       objective_name))
    model, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    return objective.build_trainer(TrainerInputs(
        model=model, tokenizer=tokenizer, params=params, train_records=records, eval_records=records,
        peft_config=None, dataset_format=dataset_format, checkpoints_dir=tmp_path / "checkpoints", resuming=False,
        callbacks=[], load_base_model=lambda: None,
    ))


def _evaluate(trainer, batch_size: int) -> dict[str, float]:
    trainer.args.per_device_eval_batch_size = batch_size
    trainer.evaluate()
    return trainer.state.log_history[-1]


@pytest.mark.parametrize(("objective", "dataset_format"), [("sft", "instruction"), ("pretrain", "text")])
def test_eval_figures_are_the_same_for_any_eval_batch_size(assets, tmp_path, objective, dataset_format):
    trainer = _trainer(assets, tmp_path, objective, dataset_format)
    whole_split = _evaluate(trainer, len(trainer.eval_dataset))
    for batch_size in (1, 4, 8):
        batched = _evaluate(trainer, batch_size)
        assert batched["eval_loss"] == pytest.approx(whole_split["eval_loss"], abs=1e-6), batch_size
        if objective == "sft":
            for key in ("eval_mean_token_accuracy", "eval_entropy"):
                assert batched[key] == pytest.approx(whole_split[key], abs=1e-6), (key, batch_size)
