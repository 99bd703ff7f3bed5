"""Who holds a queue's messages: after a Redis restart a worker still training takes no message it cannot start
while another worker of its queue is idle; two workers on one host are two workers; and Redis keeps no message that
no run waits for (a run canceled while queued, the delivery a dead worker held)."""

from datetime import datetime

import pytest

from tests.conftest import wait_for, wait_while_progressing
from tests.faults.test_queue import messages_by_run
from tests.worker.conftest import FINISHED, run_progress

# A queued run must be claimed within this long of when a worker was free for it (the figure).
START_WITHIN_S = 30
# How long the reaper sees a message stale before removing it, here (30 s by default).
STALE_GRACE_S = 2


@pytest.fixture
def private_stack_settings() -> dict[str, str]:
    # Sweeps every second and a lost worker noticed after a few silent seconds, so each fault shows quickly.
    return {"TUNELAB_REAPER_INTERVAL_S": "1", "TUNELAB_HEARTBEAT_INTERVAL_S": "1", "TUNELAB_HEARTBEAT_TIMEOUT_S": "6",
            "TUNELAB_STALE_MESSAGE_GRACE_S": str(STALE_GRACE_S)}


def _run(stack, run_id: int) -> dict:
    return stack.api.get(f"/runs/{run_id}").json()


def _seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


def test_after_a_redis_restart_a_busy_worker_takes_no_message_while_another_worker_is_idle(private_stack):
    stack = private_stack
    stack.start_worker()
    stack.start_worker()

    def workers_seen() -> int:
        return len([w for w in stack.api.get("/health").json()["workers"] if stack.queue in w["queues"]])

    wait_for(lambda: workers_seen() == 2, 120, 0.5, "/health to show two workers on one host as two")
    long_run = stack.launch(max_steps=100000, eval_steps=100000, checkpoint_every_steps=100000)
    wait_for(lambda: _run(stack, long_run["id"])["progress"]["current_step"] >= 2, 180, 0.1, "the long run to train")

    stack.redis.restart()
    # Two short runs after the restart: without a free-slot rule the busy worker, whose prefetch window Celery reset
    # on reconnecting, reserves one of them whichever the idle worker takes first.
    short = [stack.launch(max_steps=3, eval_steps=3)["id"] for _ in range(2)]
    finals = wait_while_progressing(
        lambda: {run_id: _run(stack, run_id) for run_id in short},
        lambda runs: all(run["status"] in FINISHED for run in runs.values()),
        lambda runs: [run_progress(run) for run in runs.values()], message="the short runs to finish")

    busy_worker = _run(stack, long_run["id"])["worker"]
    assert _run(stack, long_run["id"])["status"] == "running", "the long run trained on throughout"
    first, second = (finals[run_id] for run_id in short)
    for run in (first, second):
        assert run["status"] == "succeeded", run["status_reason"]
        assert run["worker"] != busy_worker, "each short run trained on the idle worker"
    starts = sorted([first, second], key=lambda run: run["started_at"])
    assert _seconds_between(starts[0]["queued_at"], starts[0]["started_at"]) < START_WITHIN_S
    assert _seconds_between(starts[0]["finished_at"], starts[1]["started_at"]) < START_WITHIN_S
    assert stack.api.post(f"/runs/{long_run['id']}/cancel", params={"force": True}).status_code == 200


def test_a_run_canceled_while_queued_leaves_no_message_in_redis(private_stack):
    stack = private_stack
    client = stack.redis.client()
    run = stack.launch(max_steps=3)  # no worker: its message waits
    wait_for(lambda: messages_by_run(client, stack.queue)[run["id"]] == 1, 30, 0.1, "the run's message")

    assert stack.api.post(f"/runs/{run['id']}/cancel").status_code == 200

    wait_for(lambda: messages_by_run(client, stack.queue)[run["id"]] == 0, STALE_GRACE_S + 45, 0.2,
             "the canceled run's message to be removed")


def test_the_delivery_a_dead_worker_held_does_not_stay_in_redis(private_stack):
    stack = private_stack
    client = stack.redis.client()
    worker = stack.start_worker()
    run = stack.launch(max_steps=100000, eval_steps=100000, checkpoint_every_steps=100000)
    wait_for(lambda: _run(stack, run["id"])["status"] == "running", 180, 0.1, "the run to start")
    assert len(client.hvals("unacked")) == 1, "the worker holds the run's delivery while it trains"

    worker.kill()

    # The reaper sees the silent heartbeat and queues the run again with a new message; the dead worker's delivery
    # goes with it, instead of staying unacknowledged for the visibility timeout (days).
    wait_for(lambda: _run(stack, run["id"])["status"] == "queued", 60, 0.2, "the lost run to be queued again")
    wait_for(lambda: not client.hvals("unacked"), STALE_GRACE_S + 45, 0.2, "the dead worker's delivery to be removed")
    assert messages_by_run(client, stack.queue)[run["id"]] == 1, "the run's new message waits"
    stack.api.post(f"/runs/{run['id']}/cancel")
