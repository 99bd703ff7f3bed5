"""The estimator against real training: its static parts equal the bytes of the tensors a run holds (CPU, every
method), and its total is near CUDA's peak on a GPU."""

import pytest

from tests.training.test_smollm2 import smollm2_dir  # noqa: F401  (the fixture)
from tunelab.training.estimator import estimate_memory, tokens_per_example, tokens_to_train
from tunelab.training.registry import get_method, get_objective, list_methods, params_model

CPU_METHODS = [m.name for m in list_methods() if not m.requires_cuda]
STATIC_PARTS = {
    "weights_bytes": "model_state_weights_bytes",
    "gradients_bytes": "model_state_gradients_bytes",
    "optimizer_states_bytes": "model_state_optimizer_states_bytes",
}


@pytest.mark.parametrize("method", CPU_METHODS)
def test_static_parts_equal_the_trained_tensors(train, assets, method):
    result, _, job = train(method, max_steps=2, eval_split=0, per_device_train_batch_size=2)

    summary = result.summary
    estimate = estimate_memory(str(assets.tiny_model), get_method(method),
                               params_model(job.objective, method).model_validate(job.params))
    assert summary["model_state_gradients_bytes"] > 0 and summary["model_state_optimizer_states_bytes"] > 0
    for estimated, measured in STATIC_PARTS.items():
        assert estimate[estimated] == pytest.approx(summary[measured], rel=0.02), estimated
    assert summary["model_state_bytes"] == sum(summary[key] for key in STATIC_PARTS.values())
    assert summary["peak_memory_bytes"] == summary["model_state_bytes"]  # on CPU: the model state, not the RSS
    assert summary["process_peak_rss_bytes"] > summary["model_state_bytes"]
    assert "cuda_peak_memory_bytes" not in summary


@pytest.mark.parametrize("method", ["full", "lora"])
def test_a_reward_models_static_parts_are_its_score_heads_not_an_lm_heads(train, assets, method):
    """A reward model has a one-output score head where a causal LM has its vocabulary-wide head (and a LoRA reward
    model trains that head beside the adapter): the estimate counts the model the run trains."""
    from tunelab.training.registry import get_objective

    result, _, job = train(method, objective="reward", dataset_path=assets.preference_dataset,
                           dataset_format="preference", max_steps=1, eval_split=0, per_device_train_batch_size=2)
    objective = get_objective("reward")
    params = params_model("reward", method).model_validate(job.params)
    estimate = estimate_memory(str(assets.tiny_model), get_method(method), params, objective=objective)
    for estimated, measured in STATIC_PARTS.items():
        assert estimate[estimated] == pytest.approx(result.summary[measured], rel=0.02), estimated
    # DPO runs the same two sequences per pair through a causal LM.
    as_causal_lm = estimate_memory(str(assets.tiny_model), get_method(method), params, objective=get_objective("dpo"))
    assert estimate["activations_bytes"] < as_causal_lm["activations_bytes"], "no vocabulary-wide logits"


def _saved_for_backward(model, sequence_length: int, batch: int) -> int:
    """Bytes autograd keeps after a real forward of the model (weights apart, a tensor saved twice counted once)."""
    import torch

    parameters = {id(p) for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        base = tensor._base if tensor._base is not None else tensor
        if id(base) not in parameters:
            saved[id(base)] = max(saved.get(id(base), 0), base.numel() * base.element_size())
        return tensor

    input_ids = torch.randint(0, model.config.vocab_size, (batch, sequence_length))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(input_ids=input_ids, labels=input_ids)
    return sum(saved.values())


@pytest.mark.parametrize("method", ["full", "lora", "ia3", "prompt"])
def test_activations_are_what_autograd_saves_for_the_method_on_this_architecture(assets, method):
    """The estimate traces the forward on the meta device with one and two layers; the real model, every layer, the
    method applied, saves exactly that (LoRA's dropout keeps a copy of each adapted layer's input: more than full)."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    spec = get_method(method)
    params = params_model("sft", method).model_validate({"max_length": 24, "per_device_train_batch_size": 3})
    estimate = estimate_memory(str(assets.tiny_model), spec, params)
    assert estimate["activations_traced"]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(assets.tiny_model)
    if spec.build_peft_config is not None:
        model = get_peft_model(model, spec.build_peft_config(params, str(assets.tiny_model)))
    model.train()
    sequence_length = params.max_length + int(getattr(params, "num_virtual_tokens", 0) or 0)
    real = _saved_for_backward(model, params.max_length, params.per_device_train_batch_size)
    assert estimate["activations_without_checkpointing_bytes"] == real, (method, sequence_length)
    # The logits' gradient beside their log-probabilities, at the peak of the backward pass.
    assert estimate["backward_temporaries_bytes"] == 2 * sequence_length * 3 * model.config.vocab_size * 4


@pytest.mark.parametrize("trainable_layers", [1, 2])
def test_freeze_tunings_activations_are_those_of_the_layers_it_differentiates(assets, trainable_layers):
    """The layers below freeze tuning's first trained one get no gradient and keep nothing for the backward; the
    trained ones are traced as full fine-tuning's (the head's input too, which a frozen head does not keep): a bound a
    little above what autograd saves, far below full fine-tuning's."""
    import torch
    from transformers import AutoModelForCausalLM

    spec = get_method("freeze")
    shape = {"max_length": 24, "per_device_train_batch_size": 3}
    params = params_model("sft", "freeze").model_validate({**shape, "trainable_layers": trainable_layers})
    estimate = estimate_memory(str(assets.tiny_model), spec, params)["activations_without_checkpointing_bytes"]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(assets.tiny_model)
    spec.prepare_model(model, params)
    model.train()
    real = _saved_for_backward(model, params.max_length, params.per_device_train_batch_size)
    assert real <= estimate <= 1.15 * real
    full = estimate_memory(str(assets.tiny_model), get_method("full"),
                           params_model("sft", "full").model_validate(shape))["activations_without_checkpointing_bytes"]
    assert estimate < full * (trainable_layers + 1) / 4


@pytest.mark.requires_gpu
@pytest.mark.parametrize("method", ["lora", "qlora", "full"])
def test_estimate_is_within_15_percent_of_the_cuda_peak(train, smollm2_dir, tmp_path, method):  # noqa: F811
    """SmolLM2, every sequence at max_length (rows longer than it, truncated): the estimate's upper bound is reached."""
    import json

    long_rows = tmp_path / "long.jsonl"
    row = {"instruction": " ".join(["word"] * 400), "input": "", "output": " ".join(["answer"] * 400)}
    long_rows.write_text("\n".join(json.dumps(row) for _ in range(32)) + "\n", encoding="utf-8")
    params = {"max_steps": 3, "eval_split": 0, "precision": "bf16", "per_device_train_batch_size": 8,
              "max_length": 256}
    result, _, job = train(method, model=smollm2_dir, dataset_path=long_rows, **params)

    estimate = estimate_memory(job.model, get_method(method),
                               params_model(job.objective, method).model_validate(job.params))
    total = estimate["per_device_bytes"][0]
    print(f"{method}: estimate {total / 2**20:.1f} MiB, CUDA peak {result.summary['cuda_peak_memory_bytes'] / 2**20:.1f} MiB")
    assert total == pytest.approx(result.summary["cuda_peak_memory_bytes"], rel=0.15)


def test_the_first_estimates_of_a_fresh_process_may_come_from_many_threads(assets):
    """The API validates launches and estimates in a thread pool: the first ones race to import transformers,
    whose lazy module raised "cannot import name 'AutoConfig'" to all but one of them."""
    import subprocess
    import sys

    code = (
        "import sys; from concurrent.futures import ThreadPoolExecutor\n"
        "from tunelab.training.estimator import read_model_config\n"
        "from tunelab.training.model_fit import model_layers\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    types = set(pool.map(lambda i: read_model_config(sys.argv[1]).model_type if i % 2 else "
        "model_layers(sys.argv[1]).names[0], range(8)))\n"
        "print(sorted(types))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(assets.tiny_model)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "llama" in done.stdout


def _online_params(objective: str, method: str, **params):
    return params_model(objective, method).model_validate({"per_device_train_batch_size": 4, **params})


@pytest.mark.parametrize(("objective", "method", "beta", "keeps"), [
    ("grpo", "full", None, False),  # TRL's default beta 0: no KL term, no reference
    ("grpo", "full", 0.1, True),
    ("rloo", "full", None, True),  # RLOO's default beta 0.05
    ("rloo", "full", 0.0, False),
    ("grpo", "lora", 0.1, False),  # the reference is the base with the adapter disabled
])
def test_an_online_rl_reference_is_counted_only_with_a_kl_term(assets, objective, method, beta, keeps):
    """TRL's GRPO and RLOO trainers load a reference copy of the policy only for beta > 0, and only without PEFT."""
    params = _online_params(objective, method, **({} if beta is None else {"beta": beta}))
    estimate = estimate_memory(str(assets.tiny_model), get_method(method), params, objective=get_objective(objective))
    if keeps:  # full fine-tuning's reference: the base loaded as the policy is, fp32
        assert estimate["reference_weights_bytes"] == estimate["total_params"] * 4
    else:
        assert estimate["reference_weights_bytes"] == 0


def _kv_cache_of_a_forward(model, sequence_length: int, batch: int) -> int:
    """Bytes of the keys and values the real model caches for `batch` sequences of `sequence_length` tokens."""
    import torch

    input_ids = torch.randint(0, model.config.vocab_size, (batch, sequence_length))
    with torch.no_grad():
        cache = model(input_ids=input_ids, use_cache=True).past_key_values
    return sum(tensor.numel() * tensor.element_size() for layer in cache.layers for tensor in (layer.keys, layer.values))


def test_online_rl_samples_prompt_and_completion_with_a_kv_cache(assets):
    """GRPO's policy trains on prompt + completion (max_length bounds the prompt: TRL cuts none), and sampling caches the
    keys and values of every completion of an optimizer step (TRL's generation batch: the per-device batch × the
    accumulation steps, each a completion; the group size only splits it)."""
    import torch
    from transformers import AutoModelForCausalLM

    grpo, full = get_objective("grpo"), get_method("full")
    params = _online_params("grpo", "full", max_length=16, max_completion_length=8, gradient_accumulation_steps=2,
                            precision="fp32")
    estimate = estimate_memory(str(assets.tiny_model), full, params, objective=grpo)
    assert estimate["sequence_length"] == 24
    sft = estimate_memory(str(assets.tiny_model), full, params_model("sft", "full").model_validate(
        {"per_device_train_batch_size": 4, "max_length": 24, "precision": "fp32"}))
    assert estimate["activations_bytes"] == sft["activations_bytes"]

    torch.manual_seed(0)
    real = _kv_cache_of_a_forward(AutoModelForCausalLM.from_pretrained(assets.tiny_model), 24, 4 * 2)
    assert estimate["generation_kv_cache_bytes"] == real

    def kv_cache(**changed) -> int:
        return estimate_memory(str(assets.tiny_model), full, params.model_copy(update=changed),
                               objective=grpo)["generation_kv_cache_bytes"]

    assert kv_cache(max_completion_length=32) == real * (16 + 32) // 24
    assert kv_cache(gradient_accumulation_steps=4) == 2 * real
    assert kv_cache(num_generations=2) == real
    assert kv_cache(precision="bf16") == real // 2
    # Sampling's cache is freed before the training step's forward: the peak holds the larger of the two.
    state = estimate["weights_bytes"] + estimate["gradients_bytes"] + estimate["optimizer_states_bytes"]
    step = estimate["activations_bytes"] + estimate["backward_temporaries_bytes"]
    assert estimate["per_device_bytes"][0] == state + max(step, estimate["generation_kv_cache_bytes"])
    assert estimate_memory(str(assets.tiny_model), full, params_model("sft", "full").model_validate({}))[
        "generation_kv_cache_bytes"] == 0


@pytest.mark.parametrize("method", ["full", "lora"])
def test_a_named_reward_model_is_counted_beside_the_policy(assets, method):
    """A reward run's model scores the completions in the training process: the base with a one-output score head,
    loaded whole, frozen, in fp32 (as the engine's load_reward_model loads it)."""
    from transformers import AutoModelForSequenceClassification

    grpo, spec = get_objective("grpo"), get_method(method)
    without = estimate_memory(str(assets.tiny_model), spec, _online_params("grpo", method), objective=grpo)
    named = estimate_memory(str(assets.tiny_model), spec, _online_params("grpo", method, reward_model_run=7),
                            objective=grpo)
    assert without["reward_model_weights_bytes"] == 0
    scorer = AutoModelForSequenceClassification.from_pretrained(assets.tiny_model, num_labels=1)
    real = sum(p.numel() * p.element_size() for p in scorer.parameters())
    assert named["reward_model_weights_bytes"] == real
    assert named["per_device_bytes"][0] - without["per_device_bytes"][0] == real


def test_kto_trains_each_preference_pair_as_two_examples(assets):
    """KTO takes a pair apart into a desirable and an undesirable answer: an epoch on N pairs trains 2N examples of
    one sequence each, the tokens DPO trains on the same pairs as N examples of two sequences; feedback rows are one
    example each."""
    from tests.training.conftest import read_jsonl
    from tunelab.training.models import load_tokenizer
    from tunelab.training.objectives import kto
    from tunelab.training.objectives.preference import preference_records

    tokenizer = load_tokenizer(str(assets.tiny_model))
    pairs = preference_records(read_jsonl(assets.preference_dataset))
    spec = get_objective("kto")
    per_row = spec.examples_per_row.get("preference", 1)
    assert len(kto.unpaired_records(pairs)) == len(pairs) * per_row == 2 * len(pairs)

    epoch = {"max_steps": 0, "eval_split": 0, "max_length": 64}
    params = params_model("kto", "full").model_validate(epoch)
    lengths = [length for pair in kto.sequence_lengths(pairs, tokenizer) for length in pair]
    kto_tokens = tokens_to_train(params, 1, len(pairs), tokens_per_example(lengths, params, spec), per_row)
    assert kto_tokens == int(sum(min(length, 64) for length in lengths))
    dpo, dpo_params = get_objective("dpo"), params_model("dpo", "full").model_validate(epoch)
    assert tokens_to_train(dpo_params, 1, len(pairs), tokens_per_example(lengths, dpo_params, dpo),
                           dpo.examples_per_row.get("preference", 1)) == kto_tokens

    rated = kto.feedback_records(read_jsonl(assets.feedback_dataset))
    feedback_lengths = list(kto.sequence_lengths(rated, tokenizer))
    assert tokens_to_train(params, 1, len(rated), tokens_per_example(feedback_lengths, params, spec),
                           spec.examples_per_row.get("feedback", 1)) == sum(min(n, 64) for n in feedback_lengths)


def test_online_rl_trains_each_prompt_with_a_group_of_completions():
    """GRPO samples num_generations completions of each prompt, each the prompt (uncut) and up to
    max_completion_length tokens: an epoch of N prompts trains N × group examples of that many tokens each."""
    spec = get_objective("grpo")
    params = params_model("grpo", "lora").model_validate({
        "max_steps": 0, "eval_split": 0, "max_length": 16, "per_device_train_batch_size": 8, "num_generations": 8,
        "max_completion_length": 20})
    prompts = [30, 50]  # longer than max_length: online RL does not cut prompts
    per_example = tokens_per_example(prompts, params, spec)
    assert per_example == 40 + 20
    assert spec.examples_of_row("prompt", params) == 8
    assert tokens_to_train(params, 1, len(prompts), per_example, spec.examples_of_row("prompt", params)) == 2 * 8 * 60
    assert tokens_per_example([], params, spec) == 16 + 20, "without the lengths: max_length and the completion"
    assert get_objective("kto").examples_of_row("preference", params) == 2
