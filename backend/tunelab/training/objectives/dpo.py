"""Direct preference optimisation with TRL's DPOTrainer on (prompt, chosen, rejected) pairs: raise the likelihood of
the chosen answer over the rejected one relative to a frozen reference (the base model; with PEFT, the base with the
adapter disabled)."""

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.preference import preference_converter
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, TrainerInputs, register_objective
from tunelab.training.truncation import preference_sequence_lengths

if TYPE_CHECKING:
    from trl import DPOTrainer

DpoLossType = Literal["sigmoid", "ipo", "hinge", "robust", "bco_pair", "sppo_hard", "apo_zero", "apo_down"]


class DpoParams(ObjectiveParams):
    beta: float = Field(
        0.1, gt=0, le=10, title="Beta",
        description="How far the policy may move from the reference: higher stays closer (IPO's τ for loss ipo)",
    )
    loss_type: DpoLossType = Field(
        "sigmoid", title="Loss", description="sigmoid is the DPO paper's loss; ipo, hinge, robust … are its variants"
    )


convert_rows = preference_converter("dpo")


def build_trainer(inputs: TrainerInputs) -> "DPOTrainer":
    from trl import DPOConfig, DPOTrainer

    params: DpoParams = inputs.params
    args = DPOConfig(
        **trainer_arguments(inputs),
        beta=params.beta,
        loss_type=[params.loss_type],
    )
    return DPOTrainer(
        # The reference loaded as the policy was (dtype, quantization), not by TRL from the model's folder.
        ref_model=inputs.load_base_model() if inputs.peft_config is None else None,
        args=args,
        **trainer_inputs(inputs),
    )


register_objective(
    ObjectiveSpec(
        name="dpo",
        title="Direct preference optimisation (DPO)",
        description="Aligns the model with preferences: raises the chosen answer's likelihood over the rejected one's, "
        "relative to the frozen base model. Takes preference pairs.",
        dataset_formats=(DatasetFormat.preference.value,),
        params_model=DpoParams,
        convert_rows=convert_rows,
        build_trainer=build_trainer,
        metric_keys=("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
                     "logps/rejected"),
        reports_perplexity=False,
        # DPO's collator cuts prompt + chosen and prompt + rejected each at max_length.
        sequence_lengths=preference_sequence_lengths,
        sequences_per_example=2,
        keeps_reference_model=True,
        learning_rate_scale=0.025,
    )
)
