"""Simple preference optimisation (SimPO) with TRL's CPOTrainer and loss_type "simpo" (trl.experimental in TRL 1.x,
whose API may change between versions; the version is pinned in pyproject.toml) on (prompt, chosen, rejected)
pairs: the reward of an answer is its length-normalised log-likelihood times beta, and the chosen answer's must beat
the rejected one's by at least the margin gamma. No reference model: one forward of the policy per pair.

TRL's simpo_gamma is gamma itself, the target margin (its loss subtracts simpo_gamma / beta from the log-probability
gap); the paper tunes the ratio gamma / beta, about 0.5 (beta 2.0, gamma 1.0)."""

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import Field

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.preference import preference_converter
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, Record, TrainerInputs, register_objective
from tunelab.training.truncation import preference_sequence_lengths

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, Trainer


class SimpoParams(ObjectiveParams):
    beta: float = Field(
        2.0, gt=0, le=20, title="Beta (reward scale)",
        description="Scale of the reward, the answer's mean log-probability per token: the SimPO paper uses 2.0 to "
        "2.5, far above DPO's beta because the reward is a per-token mean",
    )
    simpo_gamma: float = Field(
        1.0, ge=0, le=10, title="Gamma (target reward margin)",
        description="The margin the chosen answer's reward should exceed the rejected one's by (the loss is "
        "-log sigmoid(reward gap - gamma)): the paper tunes gamma / beta between 0.3 and 0.8 (0.5: gamma 1.0 at "
        "beta 2.0)",
    )
    cpo_alpha: float = Field(
        0.0, ge=0, le=10, title="SFT weight (CPO alpha)",
        description="Weight of an SFT (negative log-likelihood) term on the chosen answer added to the loss: 0 is the "
        "SimPO paper's loss; above 0 it is CPO-SimPO",
    )


def build_trainer(inputs: TrainerInputs) -> "Trainer":
    # TRL warns on every import of trl.experimental that its API may change; the version is pinned here.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl.experimental.cpo import CPOConfig, CPOTrainer

    params: SimpoParams = inputs.params
    args = CPOConfig(
        **trainer_arguments(inputs),
        loss_type="simpo",
        beta=params.beta,
        simpo_gamma=params.simpo_gamma,
        cpo_alpha=params.cpo_alpha,
    )
    return CPOTrainer(args=args, **trainer_inputs(inputs))


def sequence_lengths(records: Iterable[Record], tokenizer: "PreTrainedTokenizerBase") -> Iterator[tuple[int, int]]:
    """Token counts of prompt + chosen and prompt + rejected as CPOTrainer builds them before it cuts each answer at
    max_length: the chat template's tokens, with the bos and eos tokens added where the template has none."""
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    records = iter(records)
    first = next(records, None)
    if first is None:
        return
    lengths = iter(preference_sequence_lengths(_chain(first, records), tokenizer))
    # The ends the template writes are the same for every conversation: read them once from the first one's ids.
    ids: Any = tokenizer.apply_chat_template(first["prompt"] + first["chosen"], tokenize=True, return_dict=True)
    first_ids = ids["input_ids"]
    added = int(bos is not None and first_ids[:1] != [bos]) + int(first_ids[-1:] != [eos])
    for chosen, rejected in lengths:
        yield chosen + added, rejected + added


def _chain(first: Record, rest: Iterator[Record]) -> Iterator[Record]:
    yield first
    yield from rest


register_objective(
    ObjectiveSpec(
        name="simpo",
        title="Simple preference optimisation (SimPO)",
        description="Aligns the model with preferences without a reference model: the chosen answer's mean "
        "per-token log-likelihood must beat the rejected one's by a margin. Takes preference pairs. Runs TRL's "
        "experimental CPOTrainer.",
        dataset_formats=(DatasetFormat.preference.value,),
        params_model=SimpoParams,
        convert_rows=preference_converter("simpo"),
        build_trainer=build_trainer,
        # rewards/*: beta times the mean log-probability per token of each answer (what the loss compares);
        # logps/*: that mean itself; nll_loss: the SFT term, 0 while cpo_alpha is.
        metric_keys=("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
                     "logps/rejected", "nll_loss"),
        reports_perplexity=False,
        # The trainer cuts the answer of prompt + chosen and of prompt + rejected at max_length.
        sequence_lengths=sequence_lengths,
        # The chosen and the rejected answer of each pair go through the model in one forward; no reference.
        sequences_per_example=2,
        # DPO-like: the paper trains full models at 3e-7 to 1e-6, as DPO's 40x below SFT.
        learning_rate_scale=0.025,
        # CPOTrainer compares the logits with its labels position by position.
        aligns_virtual_tokens=False,
        next_stage=None,
    )
)
