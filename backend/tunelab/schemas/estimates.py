from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tunelab.schemas.common import ResourceId
from tunelab.schemas.devices import DevicePublic


class EstimateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Base model, as POST /runs takes it")
    objective: str = Field("sft", description="Training objective, a name from GET /methods")
    method: str = Field(description="Fine-tuning method, a name from GET /methods")
    params: dict[str, Any] = Field(default_factory=dict, description="The run's parameters (GET /methods schema)")
    queue: str | None = Field(None, max_length=50, description="Worker queue whose devices it is compared with; "
                              "default from settings")
    num_processes: int | None = Field(None, ge=1, le=64, description="Data-parallel processes; default: the "
                                      "params' num_processes (1)")
    zero_stage: int | None = Field(None, ge=0, le=3, description="ZeRO stage of `total_per_device_bytes` (0: plain "
                                   "DDP); default: the params' zero_stage (0)")
    dataset: ResourceId | None = Field(None, description="Dataset id: sizes a run that trains for epochs")


class MemoryBreakdown(BaseModel):
    weights_bytes: int = Field(description="Every parameter: frozen ones in the dtype they are loaded in, trained "
                               "ones in fp32")
    reference_weights_bytes: int = Field(description="The frozen reference model a preference objective keeps when "
                                         "the method has no adapter to disable (full DPO)")
    gradients_bytes: int
    optimizer_states_bytes: int = Field(description="AdamW: two fp32 moments per trained parameter")
    activations_bytes: int = Field(description="With the params' gradient_checkpointing setting")
    activations_with_checkpointing_bytes: int
    activations_without_checkpointing_bytes: int


class StrategyTotal(BaseModel):
    zero_stage: int = Field(description="0: plain DDP; 1: optimizer states sharded; 2: gradients too; 3: weights too")
    total_bytes: int = Field(description="On each device")


class QueueDevice(BaseModel):
    worker: str
    device: DevicePublic
    fits: bool = Field(description="Whether the estimated total per device fits in this device's memory")


class TimeEstimate(BaseModel):
    tokens: int | None = Field(description="Training tokens the run goes through: from the dataset's own token "
                               "lengths (each cut at max_length; packed sequences are full) when it is known, else "
                               "the upper bound of every example at max_length")
    tokens_basis: Literal["dataset", "max_length"] | None = Field(
        None, description="dataset: from the rows' token lengths with this model's tokenizer; max_length: an upper "
        "bound, every example at max_length (no dataset chosen)")
    tokens_per_second: float | None = Field(description="Median of earlier succeeded runs of this model and method")
    based_on_runs: int
    seconds: float | None
    reason: str | None = Field(None, description="Why there is no estimate")


class EstimatePublic(BaseModel):
    model: str
    objective: str
    method: str
    queue: str
    num_processes: int
    zero_stage: int
    total_params: int
    trainable_params: int
    gradient_checkpointing: bool = Field(description="The params' setting, which activations_bytes follows")
    memory: MemoryBreakdown
    per_device: list[StrategyTotal] = Field(description="Total per device under DDP and ZeRO-1/2/3")
    total_per_device_bytes: int = Field(description="Under the requested ZeRO stage")
    devices: list[QueueDevice] = Field(description="The devices the queue's workers would train on")
    fits: bool | None = Field(description="Whether some worker of the queue has a device it fits on; null when no "
                              "worker of the queue reports its devices")
    warning: str | None
    time: TimeEstimate
