"""A training worker keeps its next run's training process started ahead of it, with torch, transformers and TRL
loaded: the run is handed to that process, which writes into the run's own train.log as a process started for the
run does, and another one is started, while it trains, for the run after."""

import psutil

from tests.conftest import wait_for
from tests.worker.conftest import launch, training_pid, wait_finished


def _warm_processes(worker) -> list[psutil.Process]:
    """`tunelab train --warm` processes under the worker: the one waiting, and one training a run it was handed."""
    found = []
    for process in psutil.Process(worker.proc.pid).children(recursive=True):
        try:
            if "--warm" in process.cmdline():
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


def test_a_run_is_handed_to_the_training_process_started_ahead_of_it(api, worker, sample_dataset):
    [waiting] = wait_for(lambda: _warm_processes(worker) if len(_warm_processes(worker)) == 1 else None, 120, 0.2,
                         "one warm training process waiting")
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    final = wait_finished(api, run["id"])

    assert final["status"] == "succeeded", final["status_reason"]
    assert training_pid(api, run["id"]) == waiting.pid, "the run trained in the process that was waiting for it"
    log = api.get(f"/runs/{run['id']}/logs", params={"offset": 0}).json()["text"]
    assert "step 2: train/loss=" in log, "the warm process wrote its run's log into the run's train.log"
    wait_for(lambda: [p for p in _warm_processes(worker) if p.pid != waiting.pid] or None, 120, 0.2,
             "another warm training process, for the next run")
