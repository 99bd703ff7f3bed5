"""Group relative policy optimisation with TRL's GRPOTrainer: the model writes a group of completions for each
prompt, each is rewarded (online_rl: verifiable checks, a format, a length, a reward run's model) and its advantage is
its reward against its group's mean, so no value model is trained. The third stage of RLHF, after SFT and a reward
model; with an exact-match reward, RL from verifiable rewards."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives import online_rl
from tunelab.training.registry import ObjectiveSpec, TrainerInputs, register_objective

if TYPE_CHECKING:
    from transformers import Trainer


class GrpoParams(online_rl.OnlineRlParams):
    beta: float = Field(
        0.0, ge=0, le=1, title="KL coefficient",
        description="Weight of the KL penalty to the starting model; 0 (TRL's default) loads no reference model. "
        "DeepSeek-R1 used 0.001",
    )


def build_trainer(inputs: TrainerInputs) -> "Trainer":
    from trl import GRPOConfig, GRPOTrainer

    params: GrpoParams = inputs.params
    return online_rl.build_online_trainer(inputs, GRPOConfig, GRPOTrainer, params.beta)


register_objective(
    ObjectiveSpec(
        name="grpo",
        title="Group relative policy optimisation (GRPO)",
        description="Online RL: the model writes a group of answers to each prompt and learns from their rewards "
        "against the group's mean — exact or numeric match with the row's answer, a format, a length, or a reward "
        "run's score. Takes prompts (a prompt and, for match rewards, an answer) or instruction data.",
        dataset_formats=(DatasetFormat.prompt.value, DatasetFormat.instruction.value),
        params_model=GrpoParams,
        convert_rows=online_rl.prompt_converter("grpo"),
        build_trainer=build_trainer,
        metric_keys=online_rl.METRIC_KEYS,
        reports_perplexity=False,
        # The loss's forward runs each completion once (the group is the batch); sampling runs without gradients.
        sequences_per_example=1,
        # TRL's default is no KL term (beta 0), so no reference copy; a beta above 0 loads one.
        keeps_reference_model=False,
        learning_rate_scale=0.05,
        reference_model_when=online_rl.keeps_reference_with,
        reward_run_param="reward_model_run",
        completion_length_param="max_completion_length",
        completions_per_prompt_param="num_generations",
        eval_loss="mean of the GRPO loss over completions sampled for the eval split's prompts",
    )
)
