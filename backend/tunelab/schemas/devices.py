from typing import Literal

from pydantic import BaseModel, Field


class DevicePublic(BaseModel):
    kind: Literal["cpu", "cuda"]
    name: str
    memory_bytes: int = Field(description="RAM of the machine for the CPU; total memory of the GPU for a CUDA device")
    cores: int | None = Field(None, description="Logical cores (the CPU only)")
