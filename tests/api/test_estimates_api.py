"""POST /estimates: the memory of a run before launch, checked like a launch, against the devices real workers
announce, with time from the throughput of the caller's earlier runs."""

import json
import uuid

import pytest

from tests.api.teams_helpers import API, create_member, create_project, stateless_client
from tests.conftest import find_bundled_dataset, wait_for
from tunelab.db.base import utcnow
from tunelab.db.models import Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.training.devices import cpu_device

TINY = "tunelab-tiny"


def estimate(client, headers=None, **body):
    response = client.post(f"{API}/estimates", json={"model": TINY, **body}, headers=headers)
    return response


def test_estimate_of_lora_on_the_tiny_model(client):
    response = estimate(client, method="lora", params={"max_steps": 10, "per_device_train_batch_size": 4})

    assert response.status_code == 200, response.text
    body = response.json()
    assert 0 < body["trainable_params"] < body["total_params"]
    memory = body["memory"]
    # fp32 on CPU: frozen weights 4 bytes, trained ones 4 + 4 (gradient) + 8 (AdamW moments) and a step per tensor.
    assert memory["gradients_bytes"] == 4 * body["trainable_params"]
    assert memory["weights_bytes"] == 4 * body["total_params"]
    assert 8 * body["trainable_params"] < memory["optimizer_states_bytes"] < 8.01 * body["trainable_params"]
    assert memory["activations_with_checkpointing_bytes"] < memory["activations_without_checkpointing_bytes"]
    assert memory["activations_bytes"] == memory["activations_without_checkpointing_bytes"]
    static = memory["weights_bytes"] + memory["gradients_bytes"] + memory["optimizer_states_bytes"]
    assert [s["zero_stage"] for s in body["per_device"]] == [0, 1, 2, 3]
    # The peak holds the loss's backward temporaries too: the logits' gradient beside their log-probabilities.
    assert memory["activations_traced"] and memory["backward_temporaries_bytes"] > 0
    peak = static + memory["activations_bytes"] + memory["backward_temporaries_bytes"]
    assert body["total_per_device_bytes"] == body["per_device"][0]["total_bytes"] == peak
    assert memory["model_state_bytes"] == static
    assert body["time"]["tokens"] == 10 * 4 * 256  # steps × batch × max_length, the default max_length


def test_gradient_checkpointing_and_zero_change_the_total(client):
    plain = estimate(client, method="full", params={"num_processes": 1}).json()
    checkpointed = estimate(client, method="full", params={"gradient_checkpointing": True}).json()
    sharded = estimate(client, method="full", num_processes=4, zero_stage=3).json()

    assert checkpointed["gradient_checkpointing"] and not plain["gradient_checkpointing"]
    assert checkpointed["memory"]["activations_bytes"] == plain["memory"]["activations_with_checkpointing_bytes"]
    assert checkpointed["total_per_device_bytes"] < plain["total_per_device_bytes"]
    memory = sharded["memory"]
    static = memory["weights_bytes"] + memory["gradients_bytes"] + memory["optimizer_states_bytes"]
    assert sharded["num_processes"] == 4 and sharded["zero_stage"] == 3
    assert sharded["total_per_device_bytes"] == pytest.approx(
        static / 4 + memory["activations_bytes"] + memory["backward_temporaries_bytes"], abs=1)
    by_stage = [s["total_bytes"] for s in sharded["per_device"]]
    assert by_stage == sorted(by_stage, reverse=True) and by_stage[0] > by_stage[3]


def test_dpo_counts_both_answers_and_a_full_runs_reference_model(client):
    sft = estimate(client, method="full", objective="sft").json()
    full_dpo = estimate(client, method="full", objective="dpo").json()
    lora_dpo = estimate(client, method="lora", objective="dpo").json()

    assert full_dpo["memory"]["reference_weights_bytes"] == 4 * full_dpo["total_params"]
    assert lora_dpo["memory"]["reference_weights_bytes"] == 0  # the base with the adapter disabled
    assert sft["memory"]["reference_weights_bytes"] == 0
    # The same max_length and batch: DPO runs the chosen and the rejected answer of each pair.
    assert full_dpo["memory"]["activations_bytes"] == pytest.approx(2 * sft["memory"]["activations_bytes"], rel=1e-3)


@pytest.mark.parametrize(("body", "code", "field"), [
    ({"method": "nope"}, "METHOD_NOT_FOUND", "method"),
    ({"method": "lora", "objective": "nope"}, "OBJECTIVE_NOT_FOUND", "objective"),
    ({"method": "lora", "params": {"r": 0}}, "VALIDATION_ERROR", "params.r"),
    ({"method": "lora", "zero_stage": 7}, "VALIDATION_ERROR", "zero_stage"),
    ({"method": "lora", "model": "no-such-model"}, "MODEL_NOT_FOUND", "model"),
])
def test_a_wrong_request_is_refused_naming_the_field(client, body, code, field):
    response = estimate(client, **body)

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == code
    details = error["details"]
    fields = [d["field"] for d in details] if isinstance(details, list) else [details["field"]]
    assert any(f == field or f.endswith(f".{field}") for f in fields), error


def test_time_comes_from_the_callers_own_succeeded_runs(app, client):
    http = stateless_client(app)
    member = create_member(app, client, "estimator")
    own_project, _ = create_project(http, member, "estimates")
    default_project = client.get(f"{API}/projects").json()["data"][0]["id"]
    with session_scope() as session:
        for project_id, status, throughput in [(own_project, RunStatus.succeeded, 100.0),
                                               (own_project, RunStatus.succeeded, 300.0),
                                               (own_project, RunStatus.succeeded, 200.0),
                                               (own_project, RunStatus.failed, 9e9),
                                               (default_project, RunStatus.succeeded, 9e9)]:
            session.add(Run(project_id=project_id, name="history", objective="sft", method="ia3", model=TINY,
                            config={}, seed=0, queue="elsewhere", status=status, finished_at=utcnow(),
                            tokens_per_second=throughput))

    timed = estimate(http, member.headers, method="ia3", params={"max_steps": 5}).json()["time"]
    untimed = estimate(http, member.headers, method="prompt", params={"max_steps": 5}).json()["time"]

    assert timed["based_on_runs"] == 3 and timed["tokens_per_second"] == 200.0
    assert timed["seconds"] == pytest.approx(timed["tokens"] / 200.0)
    assert untimed["seconds"] is None and "no earlier succeeded run" in untimed["reason"]


def test_a_cpu_runs_process_peak_adds_the_runtime_measured_on_the_queues_runs(app, client):
    http = stateless_client(app)
    member = create_member(app, client, "peak")
    project, _ = create_project(http, member, "peaks")
    before = estimate(http, member.headers, method="lora").json()
    queue = before["queue"]  # the default; the member's new project has no runs on it yet
    assert before["process_peak"]["bytes"] is None and repr(queue) in before["process_peak"]["reason"]
    with session_scope() as session:
        for status, runtime in [(RunStatus.succeeded, 400 * 2**20), (RunStatus.succeeded, 600 * 2**20),
                                (RunStatus.succeeded, 500 * 2**20), (RunStatus.failed, 9 * 2**30)]:
            session.add(Run(project_id=project, name="history", objective="sft", method="full", model=TINY,
                            config={}, seed=0, queue=queue, status=status, finished_at=utcnow(),
                            summary_details={"runtime_rss_bytes": runtime}))

    after = estimate(http, member.headers, method="lora").json()
    peak = after["process_peak"]
    assert peak["runtime_bytes"] == 500 * 2**20 and peak["based_on_runs"] == 3  # the median; a failed run is not one
    assert peak["bytes"] == peak["runtime_bytes"] + after["total_per_device_bytes"]


@pytest.fixture
def long_context_model(assets):
    """The tiny model's config with a context of 131072 tokens: a sequence that long is refused on the tiny model
    itself, and an estimate reads only the config."""
    config = json.loads((assets.models_dir / TINY / "config.json").read_text())
    folder = assets.models_dir / f"tiny-long-context-{uuid.uuid4().hex[:8]}"  # under the models dir: a model root
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 131072}))
    return str(folder)


def test_the_queues_workers_report_their_devices_and_the_estimate_warns_beyond_them(client, worker, settings,
                                                                                     long_context_model):
    """A real worker announces its CPU; health shows it, and an estimate is compared with it."""

    def announced_devices():
        workers = client.get(f"{API}/health").json()["workers"]
        return next((w["devices"] for w in workers if settings.default_queue in w["queues"] and w["devices"]), None)

    devices = wait_for(announced_devices, timeout=60, message="the worker to announce its devices")
    cpu = cpu_device()
    assert {"kind": "cpu", "memory_bytes": cpu["memory_bytes"], "cores": cpu["cores"]}.items() <= devices[0].items()

    small = estimate(client, method="lora").json()
    huge = estimate(client, model=long_context_model, method="lora",
                    params={"max_length": 131072, "per_device_train_batch_size": 1024}).json()

    trains_on = "cuda" if any(d["kind"] == "cuda" for d in devices) else "cpu"
    assert small["devices"] and all(d["device"]["kind"] == trains_on and d["fits"] for d in small["devices"])
    assert small["fits"] is True and small["warning"] is None
    assert huge["fits"] is False and not any(d["fits"] for d in huge["devices"])
    assert "per device, more than the" in huge["warning"] and "gradient checkpointing" in huge["warning"]


def _bundled(client, name: str) -> dict:
    return find_bundled_dataset(lambda params: client.get(f"{API}/datasets", params=params).json(), name)


def test_time_counts_the_datasets_own_tokens_not_every_row_at_max_length(client):
    """An identical clone of a run took 8× less than 'at most' said: its rows are far shorter than max_length."""
    tasks = _bundled(client, "tiny-tasks")
    params = {"max_steps": 10, "per_device_train_batch_size": 4, "max_length": 256}
    body = estimate(client, method="lora", params=params, dataset=tasks["id"]).json()["time"]
    preview = client.get(f"{API}/datasets/{tasks['id']}/preview",
                         params={"model": TINY, "max_length": 256, "limit": 1}).json()
    assert preview["truncation"]["truncated_rows"] == 0  # so each row counts its whole length
    mean_tokens = preview["token_stats"]["mean"]
    assert body["tokens_basis"] == "dataset"
    assert body["tokens"] == pytest.approx(10 * 4 * mean_tokens, rel=0.01) and body["tokens"] < 10 * 4 * 256 / 4
    # Packed rows fill every sequence; with no dataset chosen the figure is the upper bound, and says so.
    packed = estimate(client, method="lora", params={**params, "packing": True}, dataset=tasks["id"]).json()["time"]
    assert packed["tokens"] == 10 * 4 * 256 and packed["tokens_basis"] == "dataset"
    bound = estimate(client, method="lora", params=params).json()["time"]
    assert bound["tokens"] == 10 * 4 * 256 and bound["tokens_basis"] == "max_length"
    # A preference row trains two sequences, each cut at max_length.
    pairs = _bundled(client, "tiny-preferences")
    dpo = estimate(client, method="lora", objective="dpo", params={**params, "max_length": 16},
                   dataset=pairs["id"]).json()["time"]
    assert dpo["tokens"] <= 10 * 4 * 2 * 16 and dpo["tokens"] > 10 * 4 * 16


def test_memory_is_counted_at_the_datasets_longest_row_not_at_max_length(client):
    """A batch is padded to its longest row: with short rows the activations of max_length never exist (the sample
    rows made SmolLM2's estimate 1.2× its measured peak)."""
    tasks = _bundled(client, "tiny-tasks")
    params = {"max_steps": 10, "per_device_train_batch_size": 4, "max_length": 256}
    preview = client.get(f"{API}/datasets/{tasks['id']}/preview",
                         params={"model": TINY, "max_length": 256, "limit": 1}).json()
    longest = preview["token_stats"]["max"]
    assert longest < 256

    with_rows = estimate(client, method="lora", params=params, dataset=tasks["id"]).json()["memory"]
    without = estimate(client, method="lora", params=params).json()["memory"]
    at_longest = estimate(client, method="lora", params={**params, "max_length": longest}).json()["memory"]

    assert (with_rows["sequence_length"], with_rows["sequence_length_basis"]) == (longest, "dataset")
    assert (without["sequence_length"], without["sequence_length_basis"]) == (256, "max_length")
    assert with_rows["activations_bytes"] == at_longest["activations_bytes"] < without["activations_bytes"]
    # Packed rows fill every sequence to max_length.
    packed = estimate(client, method="lora", params={**params, "packing": True}, dataset=tasks["id"]).json()
    assert packed["memory"]["sequence_length"] == 256


def test_the_process_peak_scales_by_what_the_allocator_kept_on_earlier_runs_of_the_model_and_method(app, client,
                                                                                                    settings):
    """glibc keeps freed activation pages between steps: a LoRA run of SmolLM2 held 1.5× its estimate. The factor is
    measured on earlier CPU runs of the same model and method, each estimated again from its recorded config."""
    from tunelab.services.catalog.models import model_param_defaults, resolve_model_path
    from tunelab.services.runs.runs import resolve_training_choice

    http = stateless_client(app)
    member = create_member(app, client, "allocator")
    project, _ = create_project(http, member, "allocator")
    tasks = _bundled(client, "tiny-tasks")
    queue = estimate(http, member.headers, method="lora").json()["queue"]

    def earlier_run(method: str, params: dict, held_per_estimated: float, **details) -> None:
        # What POST /estimates gives this run is what the factor divides by.
        total = estimate(http, member.headers, method=method, params=params,
                         dataset=tasks["id"]).json()["total_per_device_bytes"]
        resolved = resolve_training_choice("sft", method, params, queue,
                                           model_param_defaults(settings, TINY, method)).params
        config = {"objective": "sft", "method": method, "model": TINY,
                  "model_path": str(resolve_model_path(settings, TINY)),
                  "dataset": {"id": tasks["id"], "name": tasks["name"], "format": tasks["format"],
                              "content_hash": tasks["content_hash"], "rows": tasks["row_count"]},
                  "params": resolved}
        runtime = 400 * 2**20
        with session_scope() as session:
            session.add(Run(project_id=project, name="history", objective="sft", method=method, model=TINY,
                            config=config, seed=0, queue=queue, status=RunStatus.succeeded, finished_at=utcnow(),
                            summary_details={"runtime_rss_bytes": runtime,
                                             "process_peak_rss_bytes": runtime + int(total * held_per_estimated),
                                             **details}))

    earlier_run("lora", {"max_steps": 4}, 1.4)
    earlier_run("lora", {"max_steps": 4, "per_device_train_batch_size": 2, "r": 4}, 1.6)
    earlier_run("lora", {"max_steps": 4}, 1.5)
    earlier_run("lora", {"max_steps": 4}, 9.0, cuda_peak_memory_bytes=2**30)  # its RSS holds no activations
    earlier_run("full", {"max_steps": 4}, 3.0)  # another method
    answer = estimate(http, member.headers, method="lora", params={"max_steps": 8}, dataset=tasks["id"]).json()
    peak = answer["process_peak"]

    assert peak["allocator_based_on_runs"] == 3 and peak["allocator_factor"] == pytest.approx(1.5, rel=1e-3)
    assert peak["bytes"] == pytest.approx(peak["runtime_bytes"] + 1.5 * answer["total_per_device_bytes"], rel=1e-3)
    # Without an earlier run of the method the tensors are taken as they are.
    ia3 = estimate(http, member.headers, method="ia3", dataset=tasks["id"]).json()
    assert ia3["process_peak"]["allocator_factor"] == 1.0 and ia3["process_peak"]["allocator_based_on_runs"] == 0
    assert ia3["process_peak"]["bytes"] == ia3["process_peak"]["runtime_bytes"] + ia3["total_per_device_bytes"]


def test_time_tells_a_steps_fixed_cost_from_its_cost_per_token_when_earlier_runs_differ(app, client):
    """Full fine-tuning of SmolLM2 trained 95 tokens/s on short rows and 130 on long ones (the optimizer's update
    costs the same whatever the tokens): the median throughput put a long-row run at 1.32× its time."""
    http = stateless_client(app)
    member = create_member(app, client, "stepcost")
    project, _ = create_project(http, member, "stepcost")

    def seconds(tokens: float) -> float:
        return 0.5 + tokens / 400  # a fixed 0.5 s and 400 tokens/s

    with session_scope() as session:
        for tokens_per_step in (100, 110, 400):
            details = {"train_steps_timed": 10, "train_tokens_timed": 10.0 * tokens_per_step,
                       "train_seconds_timed": 10 * seconds(tokens_per_step)}
            session.add(Run(project_id=project, name="history", objective="sft", method="full", model=TINY, config={},
                            seed=0, queue="elsewhere", status=RunStatus.succeeded, finished_at=utcnow(),
                            tokens_per_second=tokens_per_step / seconds(tokens_per_step), summary_details=details))

    params = {"max_steps": 20, "per_device_train_batch_size": 2, "max_length": 64}
    time = estimate(http, member.headers, method="full", params=params).json()["time"]

    assert time["tokens"] == 20 * 2 * 64 and time["tokens_basis"] == "max_length"
    assert time["seconds_per_step_fixed"] == pytest.approx(0.5) and time["tokens_per_second"] == pytest.approx(400)
    assert time["seconds"] == pytest.approx(20 * seconds(2 * 64))
