"""What each objective declares to the estimate, checked against what its trainer really runs: the sequences one
example puts through the model in a training step (`sequences_per_example`: DPO and ORPO run the chosen and the
rejected answer) and whether full fine-tuning keeps a frozen reference copy (`keeps_reference`: for GRPO and RLOO, only
with a KL term). ORPO declared neither field and its estimate counted half its activations. A new objective is checked
here by being registered."""

import pytest
import torch

from tunelab.training import registry

BATCH = 2
DATASETS = {"preference": "preference_dataset", "text": "text_dataset", "instruction": "sample_dataset"}


# Params whose value decides whether a reference is kept: TRL's online RL trainers load one only for beta > 0.
KL_TERMS = [("grpo", {"beta": 0.1}), ("rloo", {"beta": 0.0})]


@pytest.mark.parametrize(("objective", "params"), [(o.name, {}) for o in registry.list_objectives()] + KL_TERMS,
                         ids=lambda value: ",".join(f"{k}={v}" for k, v in value.items()) or "defaults" if isinstance(value, dict)
                         else value)
def test_the_declared_estimate_fields_are_what_the_trainer_runs(objective, params, train, assets):
    spec = registry.get_objective(objective)
    dataset_format = next(f for f in ("instruction", "preference", "text") if f in spec.dataset_formats)
    trained: dict[int, int] = {}  # the input embedding of each model run with gradients (by id) -> most sequences
    frozen: set[int] = set()  # and of each model run without

    def count_sequences(module: torch.nn.Module, args: tuple) -> None:
        if isinstance(module, torch.nn.Embedding) and args and args[0].dim() == 2:
            if torch.is_grad_enabled():
                trained[id(module)] = max(trained.get(id(module), 0), args[0].shape[0])
            else:
                frozen.add(id(module))

    fields = registry.params_model(objective, "full").model_fields
    # Online RL samples a group of completions per prompt: a group as large as the batch, kept short.
    online = {"num_generations": BATCH, "max_completion_length": 4} if "num_generations" in fields else {}
    hook = torch.nn.modules.module.register_module_forward_pre_hook(count_sequences)
    try:
        result, _, job = train("full", objective=objective, dataset_format=dataset_format,
                               dataset_path=getattr(assets, DATASETS[dataset_format]), max_steps=1,
                               per_device_train_batch_size=BATCH, eval_split=0, generation_eval_rows=0, **online,
                               **params)
    finally:
        hook.remove()

    assert not result.canceled
    # The policy is the one model run with gradients; a reference copy is another model, run without them.
    assert list(trained.values()) == [BATCH * spec.sequences_per_example], trained
    run_params = registry.params_model(objective, "full").model_validate(job.params)
    assert spec.keeps_reference(run_params) == bool(frozen - set(trained)), frozen
