"""A run trained from another run's weights is loaded as it trained — the base, the parent's adapter merged, then its
own adapter — by the playground and by the merged export; the bare base with its adapter alone is another model."""

import json

import torch

from tunelab.training.generation import ModelSource, load_model, run_output
from tunelab.training.merge import merge_adapter
from tunelab.training.sink import StartingWeights


def _logits(model, tokenizer, prompt: str, count: int) -> torch.Tensor:
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, -1, :count].float()


def test_a_child_run_loads_and_merges_on_top_of_its_parents_weights(train, assets, tmp_path):
    _, _, parent = train("lora", max_steps=3, eval_steps=3, learning_rate=2e-2, generation_eval_rows=0)
    start = (StartingWeights("adapter", parent.output_dir / "adapter", source="parent"),)
    _, _, child = train("lora", max_steps=3, eval_steps=3, learning_rate=2e-2, generation_eval_rows=0,
                        start_from=start, start_tokenizer_dir=parent.output_dir / "tokenizer")
    sample = json.loads((child.output_dir / "samples.jsonl").read_text().splitlines()[0])
    trained = torch.tensor(sample["logits"])  # what the trained child computed, written by the engine itself

    source = run_output(child.output_dir, str(assets.tiny_model), (("adapter", str(parent.output_dir / "adapter")),))
    assert source is not None
    # Through JSON, as the playground's request carries it, the source is the same (hashable) one.
    assert ModelSource(**json.loads(json.dumps(source.__dict__))) == source
    loaded = load_model(source)
    assert torch.allclose(_logits(loaded.model, loaded.tokenizer, sample["prompt"], len(trained)), trained, atol=1e-5)
    alone = load_model(run_output(child.output_dir, str(assets.tiny_model)))
    assert not torch.allclose(_logits(alone.model, alone.tokenizer, sample["prompt"], len(trained)), trained,
                              atol=1e-4), "the child's adapter alone on the bare base is another model"

    merged_dir = tmp_path / "merged"
    merge_adapter(child.output_dir / "adapter", child.output_dir / "tokenizer", merged_dir, str(assets.tiny_model),
                  start)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged = AutoModelForCausalLM.from_pretrained(merged_dir).eval()
    assert torch.allclose(_logits(merged, AutoTokenizer.from_pretrained(merged_dir), sample["prompt"], len(trained)),
                          trained, atol=1e-4)


def test_an_oft_run_merges_and_a_freeze_run_starts_from_it(train, assets, tmp_path):
    """OFT folds its rotations into the weights: its merged export computes what the run trained, and a freeze tuning
    run trains on the base with it merged, saving a whole model that computes what that run trained."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def sample_of(run) -> tuple[str, torch.Tensor]:
        sample = json.loads((run.output_dir / "samples.jsonl").read_text().splitlines()[0])
        return sample["prompt"], torch.tensor(sample["logits"])

    _, _, parent = train("oft", max_steps=3, eval_steps=3, generation_eval_rows=0)
    merge_adapter(parent.output_dir / "adapter", parent.output_dir / "tokenizer", tmp_path / "merged")
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    prompt, trained = sample_of(parent)
    assert torch.allclose(_logits(merged, AutoTokenizer.from_pretrained(tmp_path / "merged"), prompt, len(trained)),
                          trained, atol=1e-4)

    start = (StartingWeights("adapter", parent.output_dir / "adapter", source="parent"),)
    _, _, child = train("freeze", max_steps=3, eval_steps=3, generation_eval_rows=0, start_from=start,
                        start_tokenizer_dir=parent.output_dir / "tokenizer")
    model = AutoModelForCausalLM.from_pretrained(child.output_dir / "model").eval()
    prompt, trained = sample_of(child)
    assert torch.allclose(_logits(model, AutoTokenizer.from_pretrained(child.output_dir / "tokenizer"), prompt,
                                  len(trained)), trained, atol=1e-4)
    frozen = "model.layers.0.mlp.up_proj.weight"
    base = AutoModelForCausalLM.from_pretrained(assets.tiny_model).state_dict()
    assert not torch.equal(model.state_dict()[frozen], base[frozen]), "the parent's rotation is in the frozen layers"


def test_grpo_full_fine_tuning_after_sft_keeps_the_sft_model_as_its_reference(train):
    """With beta > 0 and no adapter to disable, GRPO's reference is a frozen copy of what the run started from: the
    SFT run's weights merged in, not the bare base TRL would load from the model's folder. Before the first update
    the policy is that start, so the first step's KL to the reference is zero; to the bare base it is not. (Full
    fine-tuning on a merged adapter also needs the merged weights to take gradients: PEFT loaded them frozen.)"""
    from tests.training.conftest import RecordingSink

    _, _, parent = train("lora", max_steps=3, eval_steps=3, learning_rate=5e-2, generation_eval_rows=0)
    start = (StartingWeights("adapter", parent.output_dir / "adapter", source="parent"),)
    sink = RecordingSink()
    result, _, _ = train("full", objective="grpo", sink=sink, start_from=start,
                         start_tokenizer_dir=parent.output_dir / "tokenizer", max_steps=1, eval_split=0,
                         per_device_train_batch_size=4, num_generations=4, max_completion_length=6, beta=0.1,
                         generation_eval_rows=0)
    assert not result.canceled
    kl = [values["train/kl"] for _, values, _ in sink.metrics if "train/kl" in values]
    assert kl and abs(kl[0]) < 1e-6, f"the first step's KL to the reference: {kl}"
