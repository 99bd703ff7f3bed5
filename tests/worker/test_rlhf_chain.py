"""RLHF by runs that start from runs, through the API, the queue, the worker and training: SFT, then a reward model
from the SFT weights on preference pairs, then GRPO from the SFT weights rewarded by that reward run's model."""

import math

from tests.conftest import wait_while_progressing
from tests.sse import SseReader
from tests.worker.conftest import bundled_dataset, launch, series, wait_finished


def test_sft_then_a_reward_model_then_grpo_scored_by_it(api, api_server, auth_headers, worker, start_worker, settings,
                                                         sample_dataset):
    sft = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2, generation_eval_rows=0)
    assert wait_finished(api, sft["id"])["status"] == "succeeded"
    preferences = bundled_dataset(api, "tiny-preferences")
    reward = api.post("/runs", json={"objective": "reward", "method": "lora", "base_run": sft["id"],
                                     "dataset": preferences["id"],
                                     "params": {"max_steps": 4, "eval_steps": 4, "max_length": 64}})
    assert reward.status_code == 201, reward.text
    reward = reward.json()
    finished = wait_finished(api, reward["id"])
    assert finished["status"] == "succeeded", finished["status_reason"]
    assert series(api, reward["id"], "eval/accuracy")["count"], "a reward model reports its accuracy"
    assert finished["reward_accuracy"] is not None

    # The playground scores the SFT model's completion and two of your own with the reward run's model.
    start_worker(settings.infer_queue)
    scored = []
    for completion in ("5", "I do not know, sorry."):
        request = api.post("/playground", json={
            "project_id": sft["project_id"], "run_ids": [sft["id"]], "include_base": False, "prompt": "What is 2 plus 3?",
            "sampling": {"max_new_tokens": 4}, "reward_run": reward["id"], "completion": completion})
        assert request.status_code == 202, request.text
        reader = SseReader(api_server + request.json()["events_url"], headers=auth_headers).start()
        wait_while_progressing(lambda: reader, lambda r: r.finished.is_set(), lambda r: len(r.events),
                               message="the scored playground request to end")
        scores = {data["slot"]: data["score"] for event, _, data in reader.events if event == "score"}
        assert sorted(scores) == [0, 1] and all(math.isfinite(score) for score in scores.values()), reader.events
        scored.append(scores)
    assert scored[0][0] == scored[1][0], "the same completion of the same model scores the same"
    assert scored[0][1] != scored[1][1], "different completions score differently"

    rl_params = {"max_steps": 2, "eval_split": 0, "per_device_train_batch_size": 4, "num_generations": 4,
                 "max_completion_length": 6, "reward_exact_match": 0, "reward_model_run": reward["id"],
                 "generation_eval_rows": 0}
    # Only a succeeded reward model scores: the SFT run is refused, naming the field.
    not_a_scorer = api.post("/runs", json={"objective": "grpo", "method": "lora", "base_run": sft["id"],
                                           "dataset": sample_dataset["id"],
                                           "params": {**rl_params, "reward_model_run": sft["id"]}})
    assert not_a_scorer.status_code == 422, not_a_scorer.text
    assert not_a_scorer.json()["error"]["details"][0]["field"] == "params.reward_model_run"
    missing = api.post("/runs", json={"objective": "grpo", "method": "lora", "base_run": sft["id"],
                                      "dataset": sample_dataset["id"],
                                      "params": {**rl_params, "reward_model_run": 999_999}})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RUN_NOT_FOUND", missing.text

    grpo = api.post("/runs", json={"objective": "grpo", "method": "lora", "base_run": sft["id"],
                                   "dataset": sample_dataset["id"], "params": rl_params})
    assert grpo.status_code == 201, grpo.text
    grpo = grpo.json()
    assert grpo["config"]["reward_model"]["run_id"] == reward["id"]
    assert "path" not in str(grpo["config"]["reward_model"])  # run ids and names, never a server path
    finished = wait_finished(api, grpo["id"])
    assert finished["status"] == "succeeded", finished["status_reason"]
    rewards = series(api, grpo["id"], "train/rewards/reward_model/mean")["step"]
    assert rewards == [1, 2], "each step logs the reward model's mean score of its completions"
    sampled = api.get(f"/runs/{grpo['id']}/rl-samples").json()
    assert sampled["count"] and {row["step"] for row in sampled["data"]} <= {1, 2}, sampled
    assert all(set(row["rewards"]) == {"reward_model"} and row["reward"] == row["rewards"]["reward_model"]
               for row in sampled["data"]), "each sampled completion with the reward model's score, its only reward"
    saved = api.get(f"/runs/{grpo['id']}/artifacts/config.json").json()
    assert saved["reward_model"] == f"run {reward['id']} · {reward['name']}"
    assert saved["start_from"] == [{"kind": "adapter", "run": f"run {sft['id']} · {sft['name']}"}]
