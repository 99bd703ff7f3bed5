"""The queue's broker for the services layer: Celery messages on Redis, sent by task name so that the API never
imports the training stack, and what Redis holds of them (kombu's layout: a list per queue and priority, and the
`unacked` hash of delivered, unacknowledged messages)."""

import base64
import json
import uuid
from functools import lru_cache
from typing import TYPE_CHECKING, cast

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings
from tunelab.worker.celery_app import EXPORT_RUN_TASK, GENERATE_COMPLETIONS_TASK, TRAIN_RUN_TASK, celery_app

if TYPE_CHECKING:
    from kombu.transport import redis as redis_transport


class CeleryBroker:
    """Implements services.runs.queue.Broker, services.runs.exports.ExportBroker and services.evaluation.playground.GenerationBroker."""

    def epoch(self) -> str:
        # Redis loses this key exactly when it loses the queues: a restart without persistence, FLUSHALL, a new server.
        key = f"{get_settings().redis_namespace}:broker-epoch"
        redis = get_redis()
        while True:
            redis.set(key, uuid.uuid4().hex, nx=True)
            current = redis.get(key)
            if current is not None:
                return cast(str, current)  # get_redis() decodes responses

    def send(self, run_id: int, queue: str, message_id: str) -> None:
        # A run that cannot be sent now stays unsent in SQL and the reconciler sends it later.
        _send_at_once(TRAIN_RUN_TASK, run_id, queue, message_id)

    def send_export(self, export_id: int, queue: str) -> None:
        _send_at_once(EXPORT_RUN_TASK, export_id, queue)

    def send_generation(self, request_id: str, queue: str) -> None:
        _send_at_once(GENERATE_COMPLETIONS_TASK, request_id, queue)

    def held_message_ids(self, queue: str) -> set[str]:
        with celery_app.connection_for_read() as connection:
            channel = cast("redis_transport.Channel", connection.default_channel)  # the broker is Redis
            client = channel.client
            waiting = [json.loads(raw) for _, raw in _waiting(channel, {queue})]
            delivered = [json.loads(entry)[0] for entry in client.hvals(channel.unacked_key)]
        return {message["headers"]["id"] for message in waiting + delivered if "id" in message.get("headers", {})}

    def held_train_messages(self, queues: set[str]) -> dict[str, int]:
        with celery_app.connection_for_read() as connection:
            channel = cast("redis_transport.Channel", connection.default_channel)
            waiting = [json.loads(raw) for _, raw in _waiting(channel, queues)]
            delivered = [json.loads(entry)[0] for entry in channel.client.hvals(channel.unacked_key)]
        return {message_id: run_id for message_id, run_id in map(_train_run_of, waiting + delivered)
                if message_id is not None}

    def discard_messages(self, queues: set[str], message_ids: set[str]) -> int:
        discarded = 0
        with celery_app.connection_for_read() as connection:
            channel = cast("redis_transport.Channel", connection.default_channel)
            client = channel.client
            for key, raw in _waiting(channel, queues):
                if _train_run_of(json.loads(raw))[0] in message_ids:
                    discarded += client.lrem(key, 1, raw)
            for tag, entry in client.hgetall(channel.unacked_key).items():
                if _train_run_of(json.loads(entry)[0])[0] in message_ids:
                    # As kombu forgets a message it acknowledges: the hash entry and its place in the index.
                    discarded += client.hdel(channel.unacked_key, tag)
                    client.zrem(channel.unacked_index_key, tag)
        return discarded


def _send_at_once(task: str, argument: int | str, queue: str, message_id: str | None = None) -> None:
    """Send one message, or raise at once when Redis is unreachable: every caller has a way to send it later (or to
    say so), and a request must not wait on a Redis that is down. `retry=False` alone does not do it: the producer's
    connection still retries its connect for broker_connection_timeout (a launch took 6 s), so the message goes
    through a connection of its own that makes one attempt (a connect per launch, export or playground request)."""
    with celery_app.connection_for_write(transport_options={"max_retries": 0}) as connection:
        celery_app.send_task(task, args=[argument], queue=queue, task_id=message_id, retry=False,
                             connection=connection)


def _waiting(channel: "redis_transport.Channel", queues: set[str]) -> list[tuple[str, bytes]]:
    """(list key, raw message) of every message waiting in `queues`, at every priority."""
    # kombu's own name for a queue's list at one priority; private, so its type stubs leave it out.
    list_name = channel._q_for_pri  # type: ignore[attr-defined]
    keys = {list_name(queue, priority) for queue in queues for priority in channel.priority_steps}
    return [(key, raw) for key in keys for raw in channel.client.lrange(key, 0, -1)]


def _train_run_of(message: dict) -> tuple[str | None, int]:
    """The message id and run id of a train_run message (Celery's protocol 2: the args in the base64 JSON body);
    (None, 0) for any other message."""
    headers = message.get("headers", {})
    if headers.get("task") != TRAIN_RUN_TASK or "id" not in headers:
        return None, 0
    args = json.loads(base64.b64decode(message["body"]))[0]
    return headers["id"], int(args[0])


@lru_cache
def get_broker() -> CeleryBroker:
    return CeleryBroker()
