"""The registry is the only list of methods: every config round-trips through its JSON Schema and rejects bad input."""

import subprocess
import sys

import pytest
from pydantic import ValidationError

from tunelab.training.formats import DatasetFormat
from tunelab.training.registry import (
    get_method,
    get_objective,
    list_methods,
    list_objectives,
    methods_for,
    params_model,
    resolve_params,
)

EXPECTED_METHODS = {"full", "freeze", "lora", "dora", "qlora", "oft", "prefix", "prompt", "ptuning", "ia3"}
# The methods that train the model's own weights (no adapter); every other one is PEFT.
WEIGHT_METHODS = {"full", "freeze"}
EXPECTED_OBJECTIVES = {"sft", "pretrain", "dpo", "orpo", "simpo", "kto", "reward", "grpo", "rloo"}
COMBINATIONS = sorted((o.name, m.name) for o in list_objectives() for m in methods_for(o.name))


def test_registry_lists_every_method_and_objective():
    assert {m.name for m in list_methods()} == EXPECTED_METHODS
    assert {o.name for o in list_objectives()} == EXPECTED_OBJECTIVES
    for method in list_methods():
        assert method.title and method.description
        assert all(get_objective(name) for name in method.objectives or ())
        assert method.peft == (method.name not in WEIGHT_METHODS)
    for objective in list_objectives():
        assert objective.title and objective.description
        assert set(objective.dataset_formats) <= {f.value for f in DatasetFormat}
        assert methods_for(objective.name), f"{objective.name} trains with no method"


@pytest.mark.parametrize(("objective", "method"), COMBINATIONS)
def test_schema_defaults_round_trip(objective, method):
    model = params_model(objective, method)
    schema = model.model_json_schema()
    assert schema.get("additionalProperties") is False
    defaults = {name: prop["default"] for name, prop in schema["properties"].items() if "default" in prop}
    assert set(defaults) == set(schema["properties"]), "every field has a default, so {} is a valid launch"
    assert all("description" in prop for prop in schema["properties"].values())
    resolved = resolve_params(method, {}, objective)
    assert resolve_params(method, defaults, objective) == resolved
    assert model.model_validate(resolved).model_dump(mode="json") == resolved
    assert set(get_objective(objective).params_model.model_fields) <= set(resolved)


def test_objective_params_and_defaults_join_the_methods():
    dpo_lora = resolve_params("lora", {}, "dpo")
    assert dpo_lora["beta"] == 0.1 and dpo_lora["loss_type"] == "sigmoid"
    # DPO trains 40x gentler than SFT with the same method, as the practice table says.
    assert dpo_lora["learning_rate"] == pytest.approx(resolve_params("lora", {})["learning_rate"] * 0.025, rel=1e-2)
    assert "beta" not in resolve_params("lora", {}) and resolve_params("lora", {})["packing"] is False
    with pytest.raises(ValidationError, match="beta"):
        resolve_params("lora", {"beta": 0.1}, "sft")
    with pytest.raises(ValidationError):
        resolve_params("full", {"beta": 0}, "dpo")
    schema = params_model("dpo", "full").model_json_schema()["properties"]["learning_rate"]
    assert schema["exclusiveMinimum"] == 0 and schema["description"], "a changed default keeps bounds and help"


@pytest.mark.parametrize("method", sorted(EXPECTED_METHODS))
@pytest.mark.parametrize(
    "bad", [{"learning_rate": 0}, {"eval_split": 1.0}, {"per_device_train_batch_size": 0}, {"precision": "int3"}]
)
def test_out_of_bounds_rejected(method, bad):
    with pytest.raises(ValidationError):
        resolve_params(method, bad)


@pytest.mark.parametrize("method", sorted(EXPECTED_METHODS))
def test_unknown_field_rejected(method):
    with pytest.raises(ValidationError, match="not_a_param"):
        resolve_params(method, {"not_a_param": 1})


def test_method_specific_bounds():
    with pytest.raises(ValidationError):
        resolve_params("lora", {"r": 0})
    with pytest.raises(ValidationError):
        resolve_params("prompt", {"prompt_tuning_init": "text"})
    with pytest.raises(ValidationError):
        resolve_params("ia3", {"target_modules": ["k_proj"], "feedforward_modules": ["down_proj"]})
    assert resolve_params("full", {"learning_rate": 0.5})["learning_rate"] == 0.5
    with pytest.raises(ValidationError):
        resolve_params("freeze", {"trainable_layers": 0})
    with pytest.raises(ValidationError):
        resolve_params("oft", {"oft_block_size": 1})
    with pytest.raises(ValidationError, match="0 \\(off\\) or at least 1"):
        resolve_params("lora", {"loraplus_lr_ratio": 0.5})
    with pytest.raises(ValidationError):
        resolve_params("lora", {"neftune_noise_alpha": 25})
    assert resolve_params("lora", {"neftune_noise_alpha": 5})["neftune_noise_alpha"] == 5
    with pytest.raises(ValidationError, match="neftune_noise_alpha"):
        resolve_params("lora", {"neftune_noise_alpha": 5}, "dpo")  # NEFTune is SFT's


def test_pissa_is_refused_where_its_changed_base_would_be_wrong():
    """PiSSA takes its start out of the base: a reference that is the base with the adapter disabled would not be the
    base, and the plain LoRA it is saved as holds no score head. DoRA and QLoRA do not take it."""
    assert resolve_params("lora", {"init_lora_weights": "pissa"})["init_lora_weights"] == "pissa"
    assert resolve_params("lora", {"init_lora_weights": "pissa"}, "orpo")["init_lora_weights"] == "pissa"
    for objective, reason in (("dpo", "reference"), ("reward", "score head")):
        with pytest.raises(ValidationError, match=reason):
            resolve_params("lora", {"init_lora_weights": "pissa"}, objective)
    for method in ("dora", "qlora"):
        with pytest.raises(ValidationError, match="pissa"):
            resolve_params(method, {"init_lora_weights": "pissa"})
    with pytest.raises(ValidationError, match="ZeRO-3"):
        resolve_params("lora", {"init_lora_weights": "pissa", "zero_stage": 3})


def test_unknown_names_raise_key_error():
    with pytest.raises(KeyError):
        get_method("nope")
    with pytest.raises(KeyError):
        get_objective("nope")


def test_registry_import_stays_light():
    """The API process imports the registry to publish schemas; it must not pull in torch and friends."""
    code = (
        "import sys, tunelab.training.registry as r; r.list_methods(); "
        "heavy = [m for m in ('torch', 'transformers', 'peft', 'trl', 'datasets') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_method_declares_the_tiny_models_values_and_they_validate():
    """Without them the tiny model silently trained with a real model's learning rate and learned nothing in 60
    steps; they live in the method's own module now, so a new method cannot forget them."""
    for method in list_methods():
        assert method.tiny_model_defaults, f"{method.name} declares no tiny_model_defaults"
        method.params_model.model_validate(dict(method.tiny_model_defaults))


@pytest.mark.parametrize("method", [m.name for m in list_methods() if m.peft and not m.requires_cuda])
def test_a_method_is_mergeable_exactly_when_peft_can_fold_its_adapter_into_the_weights(method, assets):
    """`mergeable` decides merged exports and runs that start from runs; it was two lists beside the registry, and a
    method missing from one was refused with a wrong message."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    spec = get_method(method)
    model = AutoModelForCausalLM.from_pretrained(assets.tiny_model)
    params = spec.params_model.model_validate(dict(spec.tiny_model_defaults))
    adapted = get_peft_model(model, spec.build_peft_config(params, str(assets.tiny_model)))
    try:
        merged = adapted.merge_and_unload()
    except (AttributeError, NotImplementedError, ValueError):
        merged = None
    assert spec.mergeable == (merged is not None and not hasattr(merged, "peft_config")), method
