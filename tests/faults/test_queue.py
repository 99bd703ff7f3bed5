"""The queue under faults: one message per queued run however long it waits, nothing stranded when Redis loses its
data or is down when a run is launched, nothing lost or trained twice across a Redis restart."""

import ast
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from datetime import timedelta

import sqlalchemy as sa

from tests.conftest import wait_for, wait_while_progressing
from tests.worker.conftest import FINISHED, run_progress
from tunelab.db.base import utcnow
from tunelab.db.models import Run


def messages_by_run(redis_client, queue: str) -> Counter:
    """How many train_run messages Redis holds for each run: waiting in the queue, or delivered and unacknowledged."""
    # One MULTI/EXEC: a message a worker pops between two separate reads would be counted in both places.
    waiting, delivered = redis_client.pipeline(transaction=True).lrange(queue, 0, -1).hvals("unacked").execute()
    waiting, delivered = [json.loads(raw) for raw in waiting], [json.loads(raw)[0] for raw in delivered]
    return Counter(ast.literal_eval(message["headers"]["argsrepr"])[0] for message in waiting + delivered)


def _runs(stack, run_ids) -> dict[int, dict]:
    return {run_id: stack.api.get(f"/runs/{run_id}").json() for run_id in run_ids}


def _wait_all_finished(stack, run_ids) -> dict[int, dict]:
    return wait_while_progressing(lambda: _runs(stack, run_ids),
                                  lambda runs: all(r["status"] in FINISHED for r in runs.values()),
                                  lambda runs: [run_progress(r) for r in runs.values()], message="the runs to finish")


def test_runs_queued_far_longer_than_before_keep_exactly_one_message_each(private_stack):
    """Nobody consumes the queue, as if a long run held the only worker; the old reaper re-sent every run queued over
    300 s on every sweep (347 messages for 2 runs). Waiting is no reason to send again; a lost message is."""
    stack = private_stack
    run_ids = [stack.launch(max_steps=5)["id"] for _ in range(10)]
    redis_client = stack.redis.client()
    wait_for(lambda: messages_by_run(redis_client, stack.queue) == Counter(run_ids), 30, 0.1, "one message per run")
    engine = sa.create_engine(stack.database_url)
    runs = Run.__table__
    with engine.begin() as conn:  # as if they had waited 400 s, sent as long ago
        long_ago = utcnow() - timedelta(seconds=400)
        conn.execute(sa.update(runs).values(queued_at=long_ago, dispatched_at=long_ago))
        sent_before = dict(conn.execute(sa.select(runs.c.id, runs.c.dispatch_id)).all())
    # One message goes missing (as from a Redis restored from an older snapshot): only that run is sent again.
    lost = run_ids[3]
    for raw in redis_client.lrange(stack.queue, 0, -1):
        if ast.literal_eval(json.loads(raw)["headers"]["argsrepr"])[0] == lost:
            redis_client.lrem(stack.queue, 1, raw)
    wait_for(lambda: messages_by_run(redis_client, stack.queue)[lost] == 1, 60, 0.2, "the lost message to be re-sent")
    # Meanwhile the reaper swept again and again over nine runs "queued for 400 s": none got a second message.
    assert messages_by_run(redis_client, stack.queue) == Counter(run_ids)
    with engine.begin() as conn:
        sent_after = dict(conn.execute(sa.select(runs.c.id, runs.c.dispatch_id)).all())
    engine.dispose()
    assert {r for r in run_ids if sent_after[r] != sent_before[r]} == {lost}
    positions = sorted(run["queue_position"] for run in _runs(stack, run_ids).values())
    assert positions == list(range(1, 11))


def test_a_run_launched_while_redis_is_down_is_accepted_and_starts_once_redis_is_back(private_stack):
    stack = private_stack
    # The API reads a model's config with transformers, imported on first use (~5 s here): an estimate first, so that
    # the timed launch measures what Redis being down costs. It is still this process's first message to send.
    estimate = stack.api.post("/estimates", json={"model": "tunelab-tiny", "method": "lora"})
    assert estimate.status_code == 200, estimate.text
    stack.redis.kill()
    started = time.monotonic()
    run = stack.launch(max_steps=3, eval_steps=3)
    # Sending once retried its connect for kombu's broker_connection_timeout: 6 s and more per launch.
    assert time.monotonic() - started < 3, "the launch does not wait on the dead broker"
    assert run["status"] == "queued"
    stack.redis.start()
    # Started once Redis is back (it connects at start): the launch above is timed on a machine that is not also
    # starting a worker and its warm training process.
    stack.start_worker()
    final = _wait_all_finished(stack, [run["id"]])[run["id"]]
    assert final["status"] == "succeeded", final["status_reason"]


def test_a_redis_restart_with_one_running_and_three_queued_runs_loses_nothing(private_stack):
    stack = private_stack
    stack.start_worker()
    # Long enough to be still training when Redis is back (a restart takes seconds on a busy machine).
    running = stack.launch(max_steps=150, eval_steps=150, checkpoint_every_steps=50)
    queued = [stack.launch(max_steps=4, eval_steps=4)["id"] for _ in range(3)]
    run_ids = [running["id"], *queued]
    wait_for(lambda: stack.api.get(f"/runs/{running['id']}").json()["progress"]["current_step"] >= 3, 180, 0.1,
             "the first run to train")

    most_messages: Counter = Counter()
    first_seen_after_restart: dict[int, float] = {}
    restarted_at: list[float] = []
    stop = threading.Event()

    def watch_queue() -> None:
        client = stack.redis.client()
        while not stop.is_set():
            try:
                counts = messages_by_run(client, stack.queue)
            except Exception:  # noqa: BLE001  (Redis is being restarted)
                time.sleep(0.05)
                continue
            for run_id, count in counts.items():
                most_messages[run_id] = max(most_messages[run_id], count)
                if restarted_at and run_id not in first_seen_after_restart:
                    first_seen_after_restart[run_id] = time.monotonic()
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_queue, daemon=True)
    watcher.start()
    try:
        stack.redis.restart()
        restarted_at.append(time.monotonic())
        finals = _wait_all_finished(stack, run_ids)
    finally:
        stop.set()
        watcher.join(5)
    assert all(run["status"] == "succeeded" for run in finals.values()), {
        run_id: run["status_reason"] for run_id, run in finals.items()}
    assert max(most_messages.values()) == 1, f"at most one message per run at any time: {dict(most_messages)}"
    for run_id in queued:
        assert first_seen_after_restart[run_id] - restarted_at[0] < 30, "queued runs are runnable again within 30 s"
    for run_id, run in finals.items():
        body = stack.api.get(f"/runs/{run_id}/metrics", params={"keys": "train/loss"}).json()
        steps = body["series"][0]["step"]
        assert steps == list(range(1, run["config"]["params"]["max_steps"] + 1)), f"run {run_id} lost points"
        assert run["attempt"] == 1, "no run trained twice"


def test_a_message_to_an_unreachable_redis_fails_at_once_so_no_request_waits_on_it():
    """The broker's send, in a process of its own whose Redis is gone (nothing listens on the port): it must raise
    at once; the caller keeps the run queued in SQL for the reconciler. Celery's send_task(retry=False) alone kept
    retrying the connect for broker_connection_timeout (6 s here), the time a launch, export or playground request
    then waited."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    script = textwrap.dedent("""
        import time
        from tunelab.worker.broker import get_broker
        broker = get_broker()
        for send in (lambda: broker.send(1, "q", "id-1"), lambda: broker.send_export(1, "q"),
                     lambda: broker.send_generation("r-1", "q")):
            started = time.monotonic()
            try:
                send()
            except Exception as error:
                print(type(error).__name__, round(time.monotonic() - started, 3))
            else:
                print("sent", round(time.monotonic() - started, 3))
    """)
    env = {**os.environ, "TUNELAB_REDIS_URL": f"redis://127.0.0.1:{dead_port}/0"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    outcomes = [line.split() for line in result.stdout.splitlines()]
    assert len(outcomes) == 3, result.stdout + result.stderr
    for outcome, seconds in outcomes:
        assert outcome == "OperationalError" and float(seconds) < 1.0, outcomes
