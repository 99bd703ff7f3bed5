"""Which workers are alive and which queues they consume: each worker refreshes a short-lived Redis key."""

import json
import threading
import time
from typing import TypedDict

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings

PRESENCE_TTL_S = 30
PRESENCE_EVERY_S = 10


class WorkerPresence(TypedDict):
    name: str
    queues: list[str]
    seen_at: float  # Unix time of its last announcement


def _presence_prefix() -> str:
    return f"{get_settings().redis_namespace}:worker:"


def announce(name: str, queues: list[str]) -> None:
    presence: WorkerPresence = {"name": name, "queues": queues, "seen_at": time.time()}
    payload = json.dumps(presence)
    get_redis().set(_presence_prefix() + name, payload, ex=PRESENCE_TTL_S)


def keep_announcing(name: str, queues: list[str], stop: threading.Event) -> threading.Thread:
    def loop() -> None:
        while True:
            try:
                announce(name, queues)
            except Exception:  # noqa: BLE001  (Redis away for a moment; the key simply expires)
                pass
            if stop.wait(PRESENCE_EVERY_S):
                return

    thread = threading.Thread(target=loop, name="worker-presence", daemon=True)
    thread.start()
    return thread


def list_workers() -> list[WorkerPresence]:
    redis = get_redis()
    keys = list(redis.scan_iter(_presence_prefix() + "*", count=100))
    values = redis.mget(keys) if keys else []
    return [json.loads(v) for v in values if v]
