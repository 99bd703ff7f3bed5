"""Full fine-tuning: every weight of the model is trained."""

from pydantic import Field

from tunelab.training.params import TrainingParams
from tunelab.training.registry import MethodSpec, register_method


class FullParams(TrainingParams):
    learning_rate: float = Field(2e-5, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")


register_method(
    MethodSpec(
        name="full",
        title="Full fine-tuning",
        description="Updates all weights. Best quality per step, highest memory (about 16 bytes per parameter).",
        params_model=FullParams,
        peft=False,
        tiny_model_defaults={"learning_rate": 3e-3, "warmup_ratio": 0.0},
    )
)
