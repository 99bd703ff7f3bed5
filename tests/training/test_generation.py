"""The playground's generation on the tiny model: streamed pieces join to the completion, the run's chat template is
applied, a seed reproduces a sampled completion, a trained adapter is loaded with its run's tokenizer, and the LRU
keeps models warm."""

from tunelab.training.generation import (
    ModelCache,
    ModelSource,
    Sampling,
    generate,
    load_model,
    render_prompt,
    run_output,
)

PROMPT = "What is 2 plus 3?"


def test_streamed_pieces_join_to_the_completion_one_token_at_a_time(assets):
    loaded = load_model(ModelSource(base=str(assets.tiny_model)))
    pieces: list[str] = []
    result = generate(loaded, PROMPT, Sampling(max_new_tokens=12), pieces.append)

    assert result.token_count == 12
    assert len(pieces) >= 2, "text arrives as it is generated, not once at the end"
    assert "".join(pieces) == result.text
    prompt_ids = loaded.tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    import torch

    greedy = loaded.model.generate(input_ids=torch.tensor([prompt_ids]), max_new_tokens=12, do_sample=False,
                                   pad_token_id=loaded.tokenizer.pad_token_id)
    assert result.text == loaded.tokenizer.decode(greedy[0, len(prompt_ids):], skip_special_tokens=True)
    assert result.first_token_s is not None and 0 < result.first_token_s <= result.total_s


def test_the_chat_template_is_applied_for_chat_runs_and_not_for_text_runs(assets):
    tokenizer = load_model(ModelSource(base=str(assets.tiny_model))).tokenizer
    chat = render_prompt(tokenizer, PROMPT, chat=True)
    assert chat == tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                                 tokenize=False)
    assert chat != PROMPT and PROMPT in chat and "<|assistant|>" in chat
    assert render_prompt(tokenizer, PROMPT, chat=False) == PROMPT
    turns = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    assert render_prompt(tokenizer, turns, chat=True).index("Be brief.") < render_prompt(tokenizer, turns,
                                                                                         chat=True).index(PROMPT)


def test_a_seed_reproduces_a_sampled_completion(assets):
    loaded = load_model(ModelSource(base=str(assets.tiny_model)))
    sampled = Sampling(max_new_tokens=16, do_sample=True, temperature=1.5, top_k=0, top_p=1.0, seed=7)
    first, again = generate(loaded, PROMPT, sampled).text, generate(loaded, PROMPT, sampled).text
    others = {generate(loaded, PROMPT, Sampling(**{**sampled.__dict__, "seed": seed})).text for seed in range(8, 12)}
    assert first == again
    assert others - {first}, "other seeds sample other completions"


def test_a_trained_adapter_generates_with_its_runs_tokenizer_and_stays_warm(train, assets):
    result, _, job = train("lora", max_steps=2, eval_steps=2)
    assert not result.canceled
    assert run_output(job.output_dir.parent / "missing", str(assets.tiny_model)) is None
    source = run_output(job.output_dir, str(assets.tiny_model))
    assert source is not None and source.adapter_dir and source.tokenizer_dir

    loads: list[ModelSource] = []

    def counting_loader(wanted: ModelSource):
        loads.append(wanted)
        return load_model(wanted)

    cache = ModelCache(size=2, loader=counting_loader)
    base = ModelSource(base=str(assets.tiny_model))
    tuned = cache.get(source)
    assert type(tuned.model).__name__.startswith("Peft")
    assert tuned.tokenizer.chat_template
    text = render_prompt(tuned.tokenizer, PROMPT, chat=True)
    tuned_text = generate(tuned, text, Sampling(max_new_tokens=6)).text
    base_text = generate(cache.get(base), text, Sampling(max_new_tokens=6)).text
    assert isinstance(tuned_text, str) and isinstance(base_text, str)
    # Two steps teach the tiny model to end its answer at once; ignore_eos sees past that end.
    stopped = generate(tuned, text, Sampling(max_new_tokens=6))
    assert stopped.token_count < 6
    assert generate(tuned, text, Sampling(max_new_tokens=6, ignore_eos=True)).token_count == 6
    assert cache.get(source) is tuned and loads == [source, base], "a model used again is not loaded again"
    cache.get(ModelSource(base=str(assets.tiny_model), tokenizer_dir=source.tokenizer_dir))
    assert base not in cache and source in cache, "the least recently used model leaves first"


def test_sample_generation_after_training_stops_at_its_time_budget(assets, tmp_path):
    """A spent budget leaves completions not begun as null and marks the samples; with time left they are written."""
    import json

    from tunelab.training.engine import write_samples
    from tunelab.training.models import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    records = [{"text": "one two three four five six"}, {"text": "seven eight nine ten"}]
    spent, ample = tmp_path / "spent.jsonl", tmp_path / "ample.jsonl"
    write_samples(model, tokenizer, records, spent, time_budget_s=0.0)
    write_samples(model, tokenizer, records, ample, time_budget_s=600.0)
    cut = [json.loads(line) for line in spent.read_text().splitlines()]
    whole = [json.loads(line) for line in ample.read_text().splitlines()]
    assert [s["completion"] for s in cut] == [None, None] and all(s["time_budget_exceeded"] for s in cut)
    assert all(isinstance(s["completion"], str) and "time_budget_exceeded" not in s for s in whole)
