from pydantic import BaseModel, Field


class QueuePublic(BaseModel):
    name: str
    default: bool = Field(description="The queue a run goes to when its request names none")
    workers: int | None = Field(description="Workers seen consuming it now; null when Redis cannot say")


class QueuesPublic(BaseModel):
    """The training queues this server declares (TUNELAB_RUN_QUEUES): a run, a clone or a study names one of them."""

    data: list[QueuePublic]
    count: int
