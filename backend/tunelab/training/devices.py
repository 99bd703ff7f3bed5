"""The devices this machine can train on, as a worker announces them: the CPU (memory and cores) and each CUDA GPU.

`python -m tunelab.training.devices` prints them as JSON, so a worker learns its GPUs without importing torch (or
touching CUDA) in its own process."""

import json
import os
import platform
from typing import Literal, NotRequired, TypedDict


class Device(TypedDict):
    kind: Literal["cpu", "cuda"]
    name: str
    memory_bytes: int
    cores: NotRequired[int]  # the CPU's logical cores


def cpu_device() -> Device:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"kind": "cpu", "name": platform.processor() or platform.machine(), "memory_bytes": int(memory),
            "cores": os.cpu_count() or 1}


def cuda_devices() -> list[Device]:
    """Each CUDA GPU torch sees, with its total memory; none without torch or CUDA."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    found: list[Device] = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        found.append({"kind": "cuda", "name": properties.name, "memory_bytes": int(properties.total_memory)})
    return found


def local_devices() -> list[Device]:
    return [cpu_device(), *cuda_devices()]


if __name__ == "__main__":
    print(json.dumps(local_devices()))
