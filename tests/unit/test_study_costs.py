"""The cost table's rules: a "best" only beyond the noise measured across seeds, and no ranking of eval losses
across base models or eval splits."""

from tunelab.schemas.studies import CostValue
from tunelab.services.evaluation.cost_table import EvalSplit, RunFigures, beats_noise, cost_table, tokens_to_reach

SPLIT = EvalSplit(dataset="a" * 64, split_seed=7, eval_fraction=0.1)


def run(run_id: int, method: str, **figures) -> RunFigures:
    return RunFigures(run_id=run_id, method=method, grid=figures.pop("grid", {}),
                      base_model=figures.pop("base_model", "tunelab-tiny"), eval_split=figures.pop("eval_split", SPLIT),
                      **figures)


def _row(table, cell: str):
    return next(row for row in table.rows if row.cell == cell)


def test_single_seed_process_memory_and_time_within_five_percent_are_noise():
    # The 571.3 vs 575.8 MiB of CPU process memory: 0.8 % apart, no best.
    table = cost_table([run(1, "lora", process_peak_rss_bytes=int(571.3 * 2**20), tokens_per_second=1000.0),
                        run(2, "ia3", process_peak_rss_bytes=int(575.8 * 2**20), tokens_per_second=1030.0)])
    assert "process_peak_rss_bytes" not in _row(table, "lora").best
    assert "seconds_per_1k_tokens" not in _row(table, "ia3").best
    wide = cost_table([run(1, "lora", process_peak_rss_bytes=500 * 2**20, tokens_per_second=1000.0),
                       run(2, "ia3", process_peak_rss_bytes=600 * 2**20, tokens_per_second=1500.0)])
    assert "process_peak_rss_bytes" in _row(wide, "lora").best
    assert "seconds_per_1k_tokens" in _row(wide, "ia3").best
    # A count (trainable share) is exact: any difference ranks, even with one seed.
    assert "trainable_percent" in _row(cost_table([run(1, "lora", trainable_percent=1.0),
                                                  run(2, "ia3", trainable_percent=1.01)]), "lora").best


def test_a_best_eval_loss_must_beat_the_runner_up_by_more_than_the_spread_over_seeds():
    noisy = [run(1, "lora", best_eval_loss=1.0), run(2, "lora", best_eval_loss=1.4),
             run(3, "ia3", best_eval_loss=1.25), run(4, "ia3", best_eval_loss=1.35)]
    table = cost_table(noisy)
    lora = _row(table, "lora").values["best_eval_loss"]
    assert lora.n == 2 and abs(lora.mean - 1.2) < 1e-9 and lora.spread > 0.28
    assert all("best_eval_loss" not in row.best for row in table.rows)
    clear = [run(1, "lora", best_eval_loss=1.0), run(2, "lora", best_eval_loss=1.02),
             run(3, "ia3", best_eval_loss=1.3), run(4, "ia3", best_eval_loss=1.32)]
    assert _row(cost_table(clear), "lora").best == ["best_eval_loss"]
    assert not beats_noise(CostValue(mean=1.0, spread=0.0, n=1), CostValue(mean=1.0, spread=0.0, n=1), False)


def test_eval_losses_are_not_ranked_across_tokenizers_or_eval_splits_and_the_table_says_why():
    mixed_models = cost_table([run(1, "lora", best_eval_loss=1.0, trainable_percent=1.0),
                               run(2, "ia3", best_eval_loss=2.0, base_model="smollm2-135m", trainable_percent=5.0)])
    column = next(c for c in mixed_models.columns if c.key == "best_eval_loss")
    assert not column.ranked and "different base models and tokenizers: smollm2-135m, tunelab-tiny" in (
        column.not_ranked_reason or "")
    assert mixed_models.notes[0].startswith("not ranked:")
    assert all("best_eval_loss" not in row.best and "tokens_to_target" not in row.best for row in mixed_models.rows)
    assert "trainable_percent" in _row(mixed_models, "lora").best  # costs are still compared
    other_split = EvalSplit(dataset="a" * 64, split_seed=7, eval_fraction=0.2)
    mixed_splits = cost_table([run(1, "lora", best_eval_loss=1.0), run(2, "ia3", best_eval_loss=2.0,
                                                                           eval_split=other_split)])
    reason = next(c for c in mixed_splits.columns if c.key == "best_eval_loss").not_ranked_reason or ""
    assert "different eval splits" in reason and "eval fraction 0.2" in reason
    same = cost_table([run(1, "lora", best_eval_loss=1.0), run(2, "ia3", best_eval_loss=2.0)])
    assert all(c.ranked for c in same.columns) and _row(same, "lora").best == ["best_eval_loss"]


def test_tokens_to_target_count_to_the_worst_cells_best_loss_by_default():
    fast = run(1, "lora", best_eval_loss=1.0, eval_losses=[(10, 2.0), (20, 1.4), (30, 1.0)],
               tokens_seen_at=lambda step: step * 100.0)
    slow = run(2, "ia3", best_eval_loss=1.5, eval_losses=[(10, 2.2), (20, 1.8), (30, 1.5)], tokens_per_step=512)
    table = cost_table([fast, slow])
    assert table.target_loss == 1.5
    assert _row(table, "lora").values["tokens_to_target"].mean == 2000.0  # step 20, as the trainer counted
    assert _row(table, "ia3").values["tokens_to_target"].mean == 30 * 512  # no count logged: padded steps
    assert "tokens_to_target" in _row(table, "lora").best
    assert tokens_to_reach(slow, 1.0) is None


def test_cells_are_method_and_grid_values_with_seeds_averaged():
    table = cost_table([run(1, "lora", grid={"r": 4}, best_eval_loss=1.0),
                        run(2, "lora", grid={"r": 4}, best_eval_loss=1.2),
                        run(3, "lora", grid={"r": 8}, best_eval_loss=0.9)])
    assert [(row.cell, row.run_ids) for row in table.rows] == [("lora · r=4", [1, 2]), ("lora · r=8", [3])]
    assert _row(table, "lora · r=8").values["seconds_per_1k_tokens"] is None


def test_only_succeeded_runs_are_measured_ranked_or_set_the_target():
    # The study: a finished seed at 5.01, a running seed whose only eval is the untrained step 0 (6.286),
    # a run canceled at step 4 with the lowest memory and time.
    finished = run(1, "lora", best_eval_loss=5.01, eval_losses=[(0, 6.286), (60, 5.01)],
                   tokens_seen_at=lambda step: step * 10.0, trainable_percent=1.0)
    running = run(2, "lora", status="running", step=40, total_steps=60, best_eval_loss=6.286,
                  eval_losses=[(0, 6.286)], tokens_seen_at=lambda step: step * 10.0, trainable_percent=1.0)
    canceled = run(3, "ia3", status="canceled", step=4, total_steps=60, best_eval_loss=6.2, trainable_percent=0.1,
                   tokens_per_second=9e9, process_peak_rss_bytes=1)
    other = run(4, "dora", best_eval_loss=4.5, eval_losses=[(0, 6.286), (30, 5.0), (60, 4.5)],
                tokens_seen_at=lambda step: step * 10.0, trainable_percent=2.0)
    table = cost_table([finished, running, canceled, other])

    lora, ia3 = _row(table, "lora"), _row(table, "ia3")
    assert lora.values["best_eval_loss"].n == 1 and lora.values["best_eval_loss"].mean == 5.01
    assert lora.finished_run_ids == [1] and lora.unfinished == ["run 2: running, step 40 of 60"]
    assert ia3.unfinished == ["run 3: canceled, step 4 of 60"] and ia3.best == []
    assert all(value is None for value in ia3.values.values())
    assert table.target_loss == 5.01  # the worst finished cell, not the running seed's step-0 loss
    assert _row(table, "dora").values["tokens_to_target"].mean == 300.0
    assert "trainable_percent" in lora.best  # 1.0 % beats dora's 2.0 %; the canceled ia3's 0.1 % is not in the race
    assert table.notes[0] == "2 of 4 runs finished; figures and bests are over those only"


def test_a_table_with_nothing_comparable_says_so_instead_of_showing_zeros():
    running = cost_table([run(1, "lora", status="running", step=3, total_steps=60, best_eval_loss=6.2),
                          run(2, "ia3", status="queued", best_eval_loss=None)])
    assert running.notes[0] == "nothing ranked yet: no run has finished"
    assert running.target_loss is None and all(row.best == [] for row in running.rows)
    assert _row(running, "ia3").unfinished == ["run 2: queued"]

    # Every finished cell's best is the shared starting loss: all reach the target at step 0.
    flat = cost_table([run(1, "lora", best_eval_loss=6.0, eval_losses=[(0, 6.0), (60, 6.1)],
                           tokens_seen_at=lambda step: step * 10.0),
                       run(2, "ia3", best_eval_loss=5.0, eval_losses=[(0, 6.0), (60, 5.0)],
                           tokens_seen_at=lambda step: step * 10.0)])
    column = next(c for c in flat.columns if c.key == "tokens_to_target")
    assert not column.ranked and "before its first training step" in (column.not_ranked_reason or "")
    assert all("tokens_to_target" not in row.best for row in flat.rows)
    assert _row(flat, "ia3").best == ["best_eval_loss"]


def _generated(rouge_l: float, setting=(16, 32), base_rouge_l: float = 0.1, **figures) -> dict:
    return {"generation_rouge_l": rouge_l, "generation_exact_match": rouge_l / 2, "generation_bleu": rouge_l * 50,
            "generation_setting": setting, "base_generation": {"generation_rouge_l": base_rouge_l,
                                                               "generation_exact_match": 0.0,
                                                               "generation_bleu": 1.5}, **figures}


def test_generation_scores_rank_higher_first_beside_the_base_models_row():
    table = cost_table([run(1, "lora", **_generated(0.42)), run(2, "lora", **_generated(0.44)),
                        run(3, "ia3", **_generated(0.20)), run(4, "ia3", **_generated(0.22)),
                        run(5, "prefix", status="running", step=3, total_steps=10, **_generated(0.9))])
    column = next(c for c in table.columns if c.key == "generation_rouge_l")
    assert column.better == "higher" and column.ranked
    assert "generation_rouge_l" in _row(table, "lora").best and "generation_bleu" in _row(table, "lora").best
    assert not _row(table, "prefix").best and _row(table, "prefix").values["generation_rouge_l"] is None
    lora = _row(table, "lora").values["generation_rouge_l"]
    assert lora is not None and abs(lora.mean - 0.43) < 1e-9 and lora.n == 2
    assert table.baseline is not None and table.baseline.values == {
        "generation_rouge_l": 0.1, "generation_exact_match": 0.0, "generation_bleu": 1.5}
    assert "tunelab-tiny" in table.baseline.label
    # A reward accuracy is better higher too.
    rewards = cost_table([run(1, "lora", reward_accuracy=0.9), run(2, "ia3", reward_accuracy=0.5)])
    assert _row(rewards, "lora").best == ["reward_accuracy"]


def test_generation_scores_of_other_rows_or_answer_lengths_are_not_ranked_and_have_no_baseline():
    table = cost_table([run(1, "lora", **_generated(0.42, setting=(16, 32))),
                        run(2, "ia3", **_generated(0.20, setting=(16, 64)))])
    column = next(c for c in table.columns if c.key == "generation_rouge_l")
    assert not column.ranked and "different rows or answer lengths" in (column.not_ranked_reason or "")
    assert all("generation_rouge_l" not in row.best for row in table.rows) and table.baseline is None
    # Generated text compares across tokenizers (eval losses do not), but the base rows then differ: no baseline.
    models = cost_table([run(1, "lora", **_generated(0.42)), run(2, "ia3", base_model="smollm2", **_generated(0.2))])
    assert next(c for c in models.columns if c.key == "generation_rouge_l").ranked and models.baseline is None
    # Unfinished runs set no baseline either.
    assert cost_table([run(1, "lora", status="running", **_generated(0.42))]).baseline is None
