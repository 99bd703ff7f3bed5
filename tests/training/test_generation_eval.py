"""Evaluation by generation: the scores are the libraries' own on the written predictions, the base model's answers
are generated once per (model, split), a spent time budget scores nothing it did not answer, an eval at each eval
step is logged once per step, and a preference run reports its reward accuracy and margin."""

import json

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from tunelab.training.generation_eval import (
    BaselineCache,
    GenerationSettings,
    Question,
    corpus_scores,
    evaluate_by_generation,
    exact_match,
    row_scores,
)
from tunelab.training.models import load_model_and_tokenizer

from .conftest import read_jsonl

ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def _library_scores(predictions: list[str], references: list[str]) -> dict[str, float]:
    """The figures as the libraries compute them when called directly."""
    return {
        "exact_match": sum(p.strip().lower() == r.strip().lower() for p, r in zip(predictions, references))
        / len(predictions),
        "rouge_l": sum(ROUGE.score(r, p)["rougeL"].fmeasure for p, r in zip(predictions, references))
        / len(predictions),
        "bleu": sacrebleu.corpus_bleu(predictions, [references]).score,
    }


def test_scores_are_the_libraries_own_and_bleu_is_over_the_corpus():
    predictions = ["The cat sat on the mat.", "  Paris ", "four legs and a tail", "blue"]
    references = ["the cat sat on the mat.", "paris", "a dog has four legs and a tail", "the sky is red"]
    scores = corpus_scores(predictions, references)
    assert scores is not None and scores.rows == 4
    expected = _library_scores(predictions, references)
    assert scores.exact_match == pytest.approx(0.5)  # case and surrounding whitespace aside
    assert scores.rouge_l == pytest.approx(expected["rouge_l"])
    assert scores.bleu == pytest.approx(expected["bleu"])
    # Corpus BLEU is not the mean of sentence BLEUs, which is what a naive average would report.
    sentence_mean = sum(sacrebleu.sentence_bleu(p, [r]).score for p, r in zip(predictions, references)) / 4
    assert abs(scores.bleu - sentence_mean) > 1.0
    assert exact_match("a  b\tc", "A B C") == 1.0 and exact_match("a b c.", "a b c") == 0.0
    row = row_scores(predictions[2], references[2])
    assert row["rouge_l"] == pytest.approx(ROUGE.score(references[2], predictions[2])["rougeL"].fmeasure)
    assert row["bleu"] == pytest.approx(sacrebleu.sentence_bleu(predictions[2], [references[2]]).score)
    assert corpus_scores([], []) is None


def test_a_run_scores_its_predictions_as_the_libraries_do_and_logs_them_at_its_last_step(train):
    result, sink, job = train("full", max_steps=2, eval_steps=2, generation_eval_rows=5, generation_max_new_tokens=6)
    assert not result.canceled
    predictions = read_jsonl(job.output_dir / "predictions.jsonl")
    assert len(predictions) == 5
    assert all(isinstance(p["tuned"], str) and isinstance(p["base"], str) for p in predictions), \
        "a full fine-tuning's baseline is the base loaded again"
    tuned = _library_scores([p["tuned"] for p in predictions], [p["expected"] for p in predictions])
    base = _library_scores([p["base"] for p in predictions], [p["expected"] for p in predictions])
    summary = sink.summary
    assert summary["generation_rows_requested"] == summary["generation_rows"] == summary["base_generation_rows"] == 5
    for name in ("exact_match", "rouge_l", "bleu"):
        assert summary[f"generation_{name}"] == pytest.approx(tuned[name])
        assert summary[f"base_generation_{name}"] == pytest.approx(base[name])
        assert sink.series(f"eval/{name}") == [(2, pytest.approx(tuned[name]))]
    for row in predictions:
        assert row["tuned_scores"] == pytest.approx(row_scores(row["tuned"], row["expected"]))
        assert row["base_scores"] == pytest.approx(row_scores(row["base"], row["expected"]))
    config = json.loads((job.output_dir / "config.json").read_text())
    assert config["params"]["generation_eval_rows"] == 5 and "rouge-score" in config["resolved"]["generation_eval"][
        "rouge_l"]


def test_no_generation_eval_when_its_rows_are_zero(train):
    _, sink, job = train("lora", max_steps=1, eval_steps=1, generation_eval_rows=0)
    assert not (job.output_dir / "predictions.jsonl").exists()
    assert "generation_rows_requested" not in sink.summary and not sink.series("eval/rouge_l")


def test_the_base_models_answers_are_generated_once_per_model_and_split(assets, tmp_path):
    model, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    questions = [Question("one two three", "four five"), Question("red green", "blue")]
    settings = GenerationSettings(rows=2, max_new_tokens=4)
    cache = BaselineCache(tmp_path / "baselines")
    loads = []

    def load_base():
        loads.append(1)
        return load_model_and_tokenizer(str(assets.tiny_model))[0]

    first = evaluate_by_generation(model, tokenizer, questions, settings, "tiny", cache, load_base)
    assert len(loads) == 1 and not first.base_from_cache and len(list(cache.folder.glob("*.json"))) == 1
    # What the cache holds is what a later run shows: marked answers prove they were read, not generated again.
    (entry,) = cache.folder.glob("*.json")
    entry.write_text(json.dumps({"answers": ["four five", "cached"]}))
    again = evaluate_by_generation(model, tokenizer, questions, settings, "tiny", cache, load_base)
    assert len(loads) == 1 and again.base_from_cache and again.base == ["four five", "cached"]
    assert again.base_scores is not None and again.base_scores.exact_match == 0.5
    # Another model, or other generation settings, is another baseline.
    evaluate_by_generation(model, tokenizer, questions, settings, "another", cache, load_base)
    evaluate_by_generation(model, tokenizer, questions, GenerationSettings(rows=2, max_new_tokens=5), "tiny", cache,
                           load_base)
    assert len(loads) == 3 and len(list(cache.folder.glob("*.json"))) == 3


def test_a_spent_budget_scores_nothing_it_did_not_answer_and_caches_nothing(assets, tmp_path):
    model, tokenizer = load_model_and_tokenizer(str(assets.tiny_model))
    questions = [Question("one two three", "four five")]
    cache = BaselineCache(tmp_path / "baselines")
    spent = evaluate_by_generation(model, tokenizer, questions, GenerationSettings(1, 4, time_budget_s=0.0), "tiny",
                                   cache, lambda: load_model_and_tokenizer(str(assets.tiny_model))[0])
    assert spent.cut_short and spent.tuned == [None] and spent.base == [None]
    assert spent.tuned_scores is None and spent.base_scores is None
    assert spent.summary() == {"generation_rows_requested": 1}
    assert not cache.folder.exists()


def test_generation_at_each_eval_is_logged_once_per_eval_step(train):
    _, sink, job = train("lora", max_steps=4, eval_steps=2, generation_eval_rows=3, generation_max_new_tokens=4,
                         generation_eval_at_each_eval=True)
    assert [step for step, _ in sink.series("eval/rouge_l")] == [0, 2, 4]
    assert [step for step, _ in sink.series("eval/loss")] == [0, 2, 4]
    # The final step's answers were those of its eval: the closing evaluation scores them, it does not generate again.
    tuned = [row["tuned"] for row in read_jsonl(job.output_dir / "predictions.jsonl")]
    expected = [row["expected"] for row in read_jsonl(job.output_dir / "predictions.jsonl")]
    assert sink.series("eval/bleu")[-1][1] == pytest.approx(_library_scores(tuned, expected)["bleu"])


def test_a_preference_run_reports_reward_accuracy_and_margin_of_its_last_eval(train, assets):
    _, sink, job = train("lora", objective="dpo", dataset_path=assets.preference_dataset,
                         dataset_format="preference", max_steps=2, eval_steps=2, generation_eval_rows=2,
                         generation_max_new_tokens=4)
    assert sink.summary["reward_accuracy"] == sink.series("eval/rewards/accuracies")[-1][1]
    assert sink.summary["reward_margin"] == sink.series("eval/rewards/margins")[-1][1]
    # The expected answer of a preference pair is its chosen one.
    chosen = [json.loads(line)["chosen"] for line in assets.preference_dataset.read_text().splitlines()]
    assert {row["expected"] for row in read_jsonl(job.output_dir / "predictions.jsonl")} <= set(chosen)
