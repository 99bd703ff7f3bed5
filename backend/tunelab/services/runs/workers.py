"""Which workers are alive, which queues they consume and which devices they train on: each worker refreshes a
short-lived Redis key."""

import json
import logging
import subprocess
import sys
import threading
import time
from typing import TypedDict

from tunelab.core.redis import get_redis
from tunelab.core.settings import get_settings
from tunelab.training.devices import Device, cpu_device

log = logging.getLogger(__name__)
PRESENCE_TTL_S = 30
PRESENCE_EVERY_S = 10
DEVICE_PROBE_TIMEOUT_S = 120


class WorkerPresence(TypedDict):
    name: str
    queues: list[str]
    seen_at: float  # Unix time of its last announcement
    devices: list[Device]  # the CPU, then each CUDA GPU the worker's training processes can use


def _presence_prefix() -> str:
    return f"{get_settings().redis_namespace}:worker:"


def detect_devices() -> list[Device]:
    """This machine's devices, probed in a child process: the worker itself stays free of torch and of a CUDA
    context (its training processes are its children). The CPU alone when the probe fails."""
    try:
        probe = subprocess.run([sys.executable, "-m", "tunelab.training.devices"], capture_output=True, text=True,
                               timeout=DEVICE_PROBE_TIMEOUT_S, check=True)
        devices: list[Device] = json.loads(probe.stdout)
        return devices
    except (OSError, subprocess.SubprocessError, ValueError):
        log.warning("could not probe this machine's CUDA devices; announcing the CPU only", exc_info=True)
        return [cpu_device()]


def announce(name: str, queues: list[str], devices: list[Device]) -> None:
    presence: WorkerPresence = {"name": name, "queues": queues, "seen_at": time.time(), "devices": devices}
    payload = json.dumps(presence)
    get_redis().set(_presence_prefix() + name, payload, ex=PRESENCE_TTL_S)


def keep_announcing(name: str, queues: list[str], stop: threading.Event) -> threading.Thread:
    """Announce the worker every PRESENCE_EVERY_S until `stop`; its devices are probed once, before the first."""
    def loop() -> None:
        devices = detect_devices()
        while True:
            try:
                announce(name, queues, devices)
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
