"""GET /health: the API, its database and Redis, and the workers seen."""

from pydantic import BaseModel, Field

from tunelab.schemas.devices import DevicePublic


class WorkerPublic(BaseModel):
    name: str
    queues: list[str]
    seen_at: float
    devices: list[DevicePublic] = Field(default_factory=list, description="What its training processes can use")


class HealthPublic(BaseModel):
    status: str = Field(description="ok, or degraded when the database or Redis is down (the answer is then a 503)")
    version: str
    database: str = Field(description="ok or unavailable; an admin sees the error itself")
    redis: str = Field(description="ok or unavailable; an admin sees the error itself")
    workers: list[WorkerPublic]
