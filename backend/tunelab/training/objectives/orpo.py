"""Odds-ratio preference optimisation with TRL's ORPOTrainer (trl.experimental in TRL 1.x): SFT on the chosen answer
plus a penalty on the odds of the rejected one, in one stage and without a reference model."""

import os
from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.preference import preference_converter
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, TrainerInputs, register_objective

if TYPE_CHECKING:
    from transformers import Trainer


class OrpoParams(ObjectiveParams):
    beta: float = Field(
        0.1, gt=0, le=10, title="Lambda (odds-ratio weight)",
        description="Weight of the odds-ratio term beside the SFT loss on the chosen answer (the paper's λ)",
    )


def build_trainer(inputs: TrainerInputs) -> "Trainer":

    # TRL warns on every import of trl.experimental that its API may change; the version is pinned here.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    params: OrpoParams = inputs.params
    args = ORPOConfig(
        **trainer_arguments(inputs),
        beta=params.beta,
    )
    return ORPOTrainer(
        args=args,
        **trainer_inputs(inputs),
    )


register_objective(
    ObjectiveSpec(
        name="orpo",
        title="Odds-ratio preference optimisation (ORPO)",
        description="SFT and preference alignment in one stage, without a reference model: learns the chosen answer "
        "and lowers the odds of the rejected one. Takes preference pairs.",
        dataset_formats=(DatasetFormat.preference.value,),
        params_model=OrpoParams,
        convert_rows=preference_converter("orpo"),
        build_trainer=build_trainer,
        metric_keys=("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
                     "logps/rejected", "nll_loss", "log_odds_ratio"),
        reports_perplexity=False,
        # Its trainer runs the chosen and the rejected answer of each pair in one forward, as DPO's does; with no
        # reference model (the odds ratio needs none).
        sequences_per_example=2,
        # ORPOTrainer compares the logits with its labels position by position.
        aligns_virtual_tokens=False,
    )
)
