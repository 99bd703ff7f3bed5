from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from tunelab.schemas.common import DEFAULT_OBJECTIVE, ResourceId
from tunelab.schemas.devices import DevicePublic


class EstimateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Base model, as POST /runs takes it")
    objective: str = Field(DEFAULT_OBJECTIVE, description="Training objective, a name from GET /methods")
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
                                         "the method has no adapter to disable (full DPO; full GRPO or RLOO with a "
                                         "KL term, beta above 0)")
    reward_model_weights_bytes: int = Field(0, description="The frozen reward model an online RL run names "
                                            "(reward_run_param) and scores its completions with: the base with a "
                                            "one-output score head, in fp32")
    gradients_bytes: int
    optimizer_states_bytes: int = Field(description="AdamW: two fp32 moments per trained parameter")
    activations_bytes: int = Field(description="What autograd keeps for the backward pass, with the params' "
                                   "gradient_checkpointing setting")
    activations_with_checkpointing_bytes: int
    activations_without_checkpointing_bytes: int
    activations_traced: bool = Field(False, description="true: counted from the model's forward on the meta device "
                                     "with the method applied (per architecture and method); false: the per-layer "
                                     "formula of Korthikanti et al. (4-bit weights)")
    backward_temporaries_bytes: int = Field(0, description="Allocated and freed within the backward pass (the "
                                            "logits' gradient beside their log-probabilities): part of the peak")
    generation_kv_cache_bytes: int = Field(0, description="Online RL: the keys and values cached while the "
                                           "completions of an optimizer step are sampled (prompt + "
                                           "max_completion_length tokens each). Freed before the training step: the "
                                           "total holds the larger of it and the activations with the backward "
                                           "temporaries")
    sequence_length: int = Field(description="Tokens per sequence of the longest batch the activations are counted "
                                 "for: the dataset's longest row cut at max_length, else max_length; for online RL "
                                 "the longest prompt (not cut; max_length without a dataset) + max_completion_length")
    sequence_length_basis: Literal["dataset", "max_length"] = Field(
        description="dataset: the chosen dataset's longest row with this model's tokenizer; max_length: no dataset "
        "chosen, or the objective packs rows into full blocks")

    @computed_field(description="Weights (and a reference model, a reward model) + gradients + optimizer "  # type: ignore[prop-decorator]
                    "states")
    @property
    def model_state_bytes(self) -> int:
        return (self.weights_bytes + self.reference_weights_bytes + self.reward_model_weights_bytes
                + self.gradients_bytes + self.optimizer_states_bytes)


class ProcessPeakEstimate(BaseModel):
    """A CPU run's peak resident memory: what the run holds at its peak, plus the runtime's own share (interpreter,
    torch, transformers), which no method changes and which is measured on the queue's earlier runs."""

    bytes: int | None = Field(description="Runtime + the total per device × allocator_factor; null until a run of "
                              "the queue measured its runtime")
    runtime_bytes: int | None = Field(description="Median RSS of the queue's earlier runs before loading any model")
    based_on_runs: int
    allocator_factor: float = Field(1.0, description="What the process holds per byte of its tensors: the C allocator "
                                    "keeps freed pages between steps. The median, over the most recent CPU runs of "
                                    "this model and method, of their peak RSS less their runtime over their own "
                                    "estimate; 1.0 when none was measured")
    allocator_based_on_runs: int = Field(0, description="The runs allocator_factor was measured on")
    reason: str | None = Field(None, description="Why there is no estimate")


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
    tokens_per_second: float | None = Field(description="Training tokens per second of a step's per-token part, "
                                            "from earlier succeeded runs of this model and method (their median "
                                            "throughput when seconds_per_step_fixed is 0)")
    seconds_per_step_fixed: float = Field(0.0, description="A step's fixed cost whatever its tokens (the optimizer's "
                                          "update), fitted on earlier runs whose tokens per step differ by 1.5× or "
                                          "more; 0 when they do not")
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
    process_peak: ProcessPeakEstimate = Field(description="On a CPU: the training process's peak RSS (on a GPU "
                                              "total_per_device_bytes is the CUDA peak, and the process's RSS is "
                                              "mostly the runtime)")
    time: TimeEstimate
