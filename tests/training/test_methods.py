"""Every registered method trains a few steps on the tiny model and saves what reloads it."""

import pytest

from tunelab.training.registry import get_method, get_objective, list_methods, list_objectives, params_model

from .conftest import read_jsonl

METHODS = [
    pytest.param(m.name, marks=[pytest.mark.requires_gpu] if m.requires_cuda else []) for m in list_methods()
]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_a_few_steps(method, train):
    result, sink, job = train(method, max_steps=3, eval_steps=3)

    losses = [loss for _, loss in sink.series("train/loss")]
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    assert 0 < result.summary["trainable_params"] <= result.summary["total_params"]
    saved = job.output_dir / ("adapter" if get_method(method).peft else "model")
    assert any(saved.iterdir())
    assert (job.output_dir / "samples.jsonl").exists()
    # The samples table's base column: every method's samples hold the base model's completion too.
    assert all(isinstance(s["base_completion"], str) for s in read_jsonl(job.output_dir / "samples.jsonl"))


@pytest.mark.parametrize("objective", [o.name for o in list_objectives() if "preference" in o.dataset_formats])
@pytest.mark.parametrize("method", [m.name for m in list_methods() if m.prepends_virtual_tokens])
def test_a_method_that_prepends_virtual_tokens_trains_each_preference_objective_whose_trainer_lines_them_up(
    method, objective, train, assets
):
    """TRL's experimental CPO (SimPO) and ORPO trainers compare the logits with the labels position by position, and
    prompt tuning's virtual tokens lengthen the logits: offered, the combination failed at its first step."""
    spec = get_objective(objective)
    assert get_method(method).supports(objective) == spec.aligns_virtual_tokens
    if not spec.aligns_virtual_tokens:
        with pytest.raises(ValueError, match=f"does not support objective '{objective}'"):
            train(method, objective=objective, dataset_path=assets.preference_dataset, dataset_format="preference",
                  max_steps=1)
        return
    result, sink, _ = train(method, objective=objective, dataset_path=assets.preference_dataset,
                            dataset_format="preference", max_steps=1, eval_split=0, generation_eval_rows=0,
                            per_device_train_batch_size=2, max_length=64)
    assert not result.canceled and sink.series("train/loss")


def test_dora_learns_a_magnitude_beside_the_lora_update(train):
    lora, _, _ = train("lora", max_steps=1, eval_split=0)
    dora, _, job = train("dora", max_steps=1, eval_split=0)
    assert dora.summary["trainable_params"] > lora.summary["trainable_params"]
    assert '"use_dora": true' in (job.output_dir / "adapter" / "adapter_config.json").read_text()


def test_qlora_without_cuda_says_it_needs_one(train):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        train("qlora", max_steps=1)


def _changed_parameters(before, after) -> set[str]:
    import torch

    return {name for name, tensor in after.items() if not torch.equal(tensor, before[name])}


def test_freeze_trains_only_the_last_layers_and_what_it_is_asked_to(train, assets):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(assets.tiny_model).state_dict()
    quick = {"max_steps": 2, "eval_split": 0, "generation_eval_rows": 0}

    result, _, job = train("freeze", trainable_layers=1, **quick)
    trained = AutoModelForCausalLM.from_pretrained(job.output_dir / "model").state_dict()
    last_layer = {name for name in base if name.startswith("model.layers.3.")}
    assert _changed_parameters(base, trained) == last_layer
    assert result.summary["trainable_params"] == sum(base[name].numel() for name in last_layer)

    _, _, job = train("freeze", trainable_layers=2, train_embeddings=True, train_head=True, **quick)
    trained = AutoModelForCausalLM.from_pretrained(job.output_dir / "model").state_dict()
    assert _changed_parameters(base, trained) == {
        name for name in base
        if name.startswith(("model.layers.2.", "model.layers.3.", "model.embed_tokens.", "lm_head."))}


def test_freeze_refuses_more_layers_than_the_model_has(train):
    with pytest.raises(ValueError, match="trainable_layers is 5, but the model has 4 transformer layers"):
        train("freeze", trainable_layers=5, max_steps=1)


def _adapted(assets, method: str, **params):
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    spec = get_method(method)
    resolved = params_model("sft", method).model_validate(params)
    model = AutoModelForCausalLM.from_pretrained(assets.tiny_model)
    return get_peft_model(model, spec.build_peft_config(resolved, str(assets.tiny_model)))


def test_rslora_scales_the_update_by_alpha_over_the_root_of_the_rank(assets):
    plain = _adapted(assets, "lora", r=16, lora_alpha=16)
    stabilised = _adapted(assets, "lora", r=16, lora_alpha=16, use_rslora=True)
    layer = "base_model.model.model.layers.0.self_attn.q_proj"
    assert plain.get_submodule(layer).scaling["default"] == pytest.approx(16 / 16)
    assert stabilised.get_submodule(layer).scaling["default"] == pytest.approx(16 / 16**0.5)


def test_pissa_starts_from_the_principal_singular_vectors_taken_out_of_the_base(assets):
    import torch
    from transformers import AutoModelForCausalLM

    original = AutoModelForCausalLM.from_pretrained(assets.tiny_model).model.layers[0].mlp.up_proj.weight.detach()
    adapted = _adapted(assets, "lora", r=4, init_lora_weights="pissa", pissa_niter=0)
    layer = adapted.get_submodule("base_model.model.model.layers.0.mlp.up_proj")
    update = layer.scaling["default"] * layer.lora_B["default"].weight @ layer.lora_A["default"].weight
    u, s, vh = torch.linalg.svd(original, full_matrices=False)
    principal = u[:, :4] @ torch.diag(s[:4]) @ vh[:4]
    assert torch.allclose(update, principal, atol=1e-5)
    assert torch.allclose(layer.base_layer.weight, original - principal, atol=1e-5), "taken out of the base"


def test_a_pissa_run_saves_a_plain_lora_that_reproduces_it_on_the_unchanged_base(train, assets):
    """The adapter PiSSA trains applies to the base it changed; the run saves PEFT's conversion to a LoRA of twice the
    rank, which applies to the base as it is: loaded there, it gives the trained model's logits. The samples' base
    completions are the base's, not those of the rest PiSSA left of it with the adapter switched off."""
    import json

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tunelab.training.generation_eval import SAMPLE_NEW_TOKENS, greedy_completion

    _, _, job = train("lora", max_steps=3, eval_steps=3, r=4, init_lora_weights="pissa", use_rslora=True)
    config = json.loads((job.output_dir / "adapter" / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["init_lora_weights"] is True
    reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(assets.tiny_model),
                                         job.output_dir / "adapter").eval()
    samples = read_jsonl(job.output_dir / "samples.jsonl")
    assert samples
    for sample in samples:
        with torch.no_grad():
            logits = reloaded(input_ids=torch.tensor([sample["prompt_token_ids"]])).logits[0, -1, :16]
        assert logits.tolist() == pytest.approx(sample["logits"], abs=1e-4)
    base = AutoModelForCausalLM.from_pretrained(assets.tiny_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(job.output_dir / "tokenizer")
    assert [s["base_completion"] for s in samples] == [
        greedy_completion(base, tokenizer, torch.tensor([s["prompt_token_ids"]]), SAMPLE_NEW_TOKENS) for s in samples]


def test_lora_plus_gives_the_b_matrices_a_higher_learning_rate(assets, tmp_path):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    spec = get_method("lora")
    params = params_model("sft", "lora").model_validate({"learning_rate": 1e-3, "loraplus_lr_ratio": 16})
    trainer = SFTTrainer(
        model=str(assets.tiny_model), args=SFTConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none",
                                                     learning_rate=params.learning_rate, weight_decay=0.01),
        train_dataset=Dataset.from_list([{"text": "hello"}]),
        peft_config=spec.build_peft_config(params, str(assets.tiny_model)),
    )
    optimizer = spec.build_optimizer(trainer, params)
    names = {id(parameter): name for name, parameter in trainer.model.named_parameters()}
    rates = {names[id(parameter)]: group["lr"] for group in optimizer.param_groups for parameter in group["params"]}
    assert rates and all(rate == (1.6e-2 if "lora_B" in name else 1e-3) for name, rate in rates.items()), rates
    assert {name for name, parameter in trainer.model.named_parameters() if parameter.requires_grad} == set(rates)
    assert all(group["weight_decay"] == 0.01 for group in optimizer.param_groups if group["params"])
    assert spec.build_optimizer(trainer, params.model_copy(update={"loraplus_lr_ratio": 0.0})) is None


@pytest.mark.parametrize(("objective", "params", "refused"), [
    ("dpo", {}, True),
    ("grpo", {"beta": 0.0}, False),
    ("grpo", {"beta": 0.1}, True),
    ("rloo", {}, True),  # RLOO's default beta is above 0: it keeps a reference
    ("reward", {}, True),  # a score head PiSSA's plain-LoRA conversion would not keep
])
def test_pissa_is_refused_where_a_reference_or_a_score_head_would_be_wrong(objective, params, refused):
    """Disabling a PiSSA adapter does not give the base back, so PiSSA is refused where the objective compares with a
    reference: DPO always, GRPO only at beta > 0 (at beta 0 TRL loads no reference)."""
    from pydantic import ValidationError

    from tunelab.training import registry

    given = {"init_lora_weights": "pissa", "reward_exact_match": 1.0} if objective in ("grpo", "rloo") else {
        "init_lora_weights": "pissa"}
    try:
        registry.resolve_params("lora", {**given, **params}, objective)
    except ValidationError as exc:
        assert refused, exc
        assert "PiSSA" in str(exc)
    else:
        assert not refused, f"PiSSA with {objective} {params} was accepted"
