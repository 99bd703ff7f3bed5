"""Reward modelling with TRL's RewardTrainer on (prompt, chosen, rejected) pairs: the base with a one-output score
head (a sequence classifier) learns to score the chosen answer above the rejected one (a Bradley-Terry loss). The
second stage of RLHF: its model is the reward an online RL run (GRPO, RLOO) optimises against.

The artifact is a plain transformers `AutoModelForSequenceClassification` (full) or a PEFT adapter of task type
SEQ_CLS with its score head (LoRA …); either scores a conversation with no Tunelab code."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.preference import preference_converter
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, TrainerInputs, register_objective
from tunelab.training.truncation import preference_sequence_lengths

if TYPE_CHECKING:
    from trl import RewardTrainer


class RewardParams(ObjectiveParams):
    center_rewards_coefficient: float = Field(
        0.0, ge=0, le=1, title="Reward centring",
        description="Weight of a penalty on the mean squared score, which keeps scores near zero so that they are "
        "comparable across batches (0: off; TRL suggests 0.01)",
    )


def build_trainer(inputs: TrainerInputs) -> "RewardTrainer":
    from trl import RewardConfig, RewardTrainer

    params: RewardParams = inputs.params
    args = RewardConfig(
        **trainer_arguments(inputs),
        center_rewards_coefficient=params.center_rewards_coefficient or None,
    )
    return RewardTrainer(args=args, **trainer_inputs(inputs))


register_objective(
    ObjectiveSpec(
        name="reward",
        title="Reward model",
        description="Trains a model that scores answers: a score head on the base learns to rate the chosen answer "
        "above the rejected one. The reward of an RLHF pipeline. Takes preference pairs; a pair longer than "
        "max_length is left out.",
        dataset_formats=(DatasetFormat.preference.value,),
        params_model=RewardParams,
        convert_rows=preference_converter("reward"),
        build_trainer=build_trainer,
        # accuracy: the share of pairs whose chosen answer scores above the rejected; margin: the mean score gap.
        metric_keys=("accuracy", "margin", "mean_reward", "min_reward", "max_reward"),
        reports_perplexity=False,
        # The trainer drops a pair whose prompt + chosen or prompt + rejected is longer than max_length.
        sequence_lengths=preference_sequence_lengths,
        # Chosen and rejected go through the model in one batch.
        sequences_per_example=2,
        model_head="sequence_classification",
        next_stage=None,
    )
)
