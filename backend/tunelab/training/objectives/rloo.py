"""REINFORCE leave-one-out with TRL's RLOOTrainer: the model writes a group of completions for each prompt, each is
rewarded (online_rl: verifiable checks, a format, a length, a reward run's model) and its baseline is the mean reward
of the other completions of its group. GRPO's sibling, with a KL penalty to the starting model by default."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives import online_rl
from tunelab.training.registry import ObjectiveSpec, TrainerInputs, register_objective

if TYPE_CHECKING:
    from transformers import Trainer


class RlooParams(online_rl.OnlineRlParams):
    beta: float = Field(
        0.05, ge=0, le=1, title="KL coefficient",
        description="Weight of the KL penalty to the starting model (TRL's default 0.05); 0 loads no reference model",
    )


def build_trainer(inputs: TrainerInputs) -> "Trainer":
    from trl import RLOOConfig, RLOOTrainer

    params: RlooParams = inputs.params
    return online_rl.build_online_trainer(inputs, RLOOConfig, RLOOTrainer, params.beta)


register_objective(
    ObjectiveSpec(
        name="rloo",
        title="REINFORCE leave-one-out (RLOO)",
        description="Online RL like GRPO, with each answer's baseline the mean reward of the other answers to its "
        "prompt, and a KL penalty to the starting model. Takes prompts or instruction data.",
        dataset_formats=(DatasetFormat.prompt.value, DatasetFormat.instruction.value),
        params_model=RlooParams,
        convert_rows=online_rl.prompt_converter("rloo"),
        build_trainer=build_trainer,
        metric_keys=online_rl.METRIC_KEYS,
        reports_perplexity=False,
        sequences_per_example=1,
        # With its default beta the full method keeps a frozen copy of the starting model (TRL loads it).
        keeps_reference_model=True,
        learning_rate_scale=0.05,
        reference_model_when=online_rl.keeps_reference_with,
        reward_run_param="reward_model_run",
        completion_length_param="max_completion_length",
        completions_per_prompt_param="num_generations",
        eval_loss="mean of the RLOO loss over completions sampled for the eval split's prompts",
    )
)
