"""Kahneman-Tversky optimisation with TRL's KTOTrainer (trl.KTOTrainer, stable since TRL 1.x) on answers rated one
by one: (prompt, completion, label) feedback rows, a thumbs up or down each, or preference pairs taken apart into a
desirable and an undesirable answer. The policy raises the likelihood of desirable answers and lowers that of
undesirable ones relative to a frozen reference (the base model; with PEFT, the base with the adapter disabled),
each measured against an estimate of the policy's KL divergence from the reference.

TRL's trainer takes the rows in order (sequential sampling) and estimates the KL term of each batch from mismatched
rows: each prompt with the completion of the row before it in the batch. Feedback rows keep their file order, as
TRL's; preference pairs are taken apart so that every batch holds both ratings and no row's neighbour is the other
answer to its own prompt (see unpaired_records)."""

import dataclasses
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Self

from pydantic import Field, model_validator

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.objectives.preference import preference_records
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, Record, TrainerInputs, register_objective
from tunelab.training.truncation import RowLengths, preference_sequence_lengths, sft_sequence_lengths

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from trl import KTOTrainer


class KtoParams(ObjectiveParams):
    beta: float = Field(
        0.1, gt=0, le=10, title="Beta",
        description="How far the policy may move from the reference: higher stays closer (the KTO paper's and TRL's "
        "default, 0.1)",
    )
    desirable_weight: float = Field(
        1.0, gt=0, le=10, title="Desirable weight",
        description="Weight of the loss on desirable (thumbs-up) answers. With unequal counts, TRL advises weights "
        "such that desirable_weight × desirable rows ÷ (undesirable_weight × undesirable rows) is between 1 and 4/3",
    )
    undesirable_weight: float = Field(
        1.0, gt=0, le=10, title="Undesirable weight",
        description="Weight of the loss on undesirable (thumbs-down) answers; see the desirable weight",
    )

    @model_validator(mode="after")
    def _estimates_the_kl_term_within_a_batch(self) -> Self:
        # Here as a part of a run's params, which hold the batch size too (the objective's own model does not).
        batch = getattr(self, "per_device_train_batch_size", None)
        if batch is not None and batch < 2:
            raise ValueError("per_device_train_batch_size: KTO estimates its KL term from the other rows of a batch, "
                             "so a batch needs at least 2 rows")
        return self


def feedback_records(rows: list[Record]) -> list[Record]:
    """Feedback rows → TRL's conversational unpaired preference records, rendered with the model's chat template."""
    return [
        {
            "prompt": [{"role": "user", "content": row["prompt"]}],
            "completion": [{"role": "assistant", "content": row["completion"]}],
            "label": row["label"],
        }
        for row in rows
    ]


def convert_rows(rows: list[Record], dataset_format: str) -> list[Record]:
    """Feedback rows as rated answers; preference rows as pairs, kept whole until the eval split is drawn."""
    if dataset_format == DatasetFormat.feedback:
        return feedback_records(rows)
    if dataset_format == DatasetFormat.preference:
        return preference_records(rows)
    raise ValueError(f"the kto objective takes feedback or preference datasets, not {dataset_format!r}")


def unpaired_records(records: list[Record]) -> list[Record]:
    """Preference records → rated answers, each pair's chosen answer desirable and its rejected one undesirable;
    rated answers as they are.

    The chosen answers keep their order, each followed by the rejected answer of the pair half the dataset further
    on: every batch holds both ratings (TRL's unpair_preference_dataset puts all chosen answers first, so batches of
    one rating only) and a row's KL companion, the completion before it, answers another prompt."""
    if not records or "chosen" not in records[0]:
        return records
    shift = (len(records) + 1) // 2
    rows = []
    for i, record in enumerate(records):
        other = records[(i + shift) % len(records)]
        rows.append({"prompt": record["prompt"], "completion": record["chosen"], "label": True})
        rows.append({"prompt": other["prompt"], "completion": other["rejected"], "label": False})
    return rows


def build_trainer(inputs: TrainerInputs) -> "KTOTrainer":
    from trl import KTOConfig, KTOTrainer

    params: KtoParams = inputs.params
    args = KTOConfig(
        **trainer_arguments(inputs),
        beta=params.beta,
        desirable_weight=params.desirable_weight,
        undesirable_weight=params.undesirable_weight,
    )
    rated = dataclasses.replace(inputs, train_records=unpaired_records(inputs.train_records),
                                eval_records=unpaired_records(inputs.eval_records))
    return KTOTrainer(
        # The reference loaded as the policy was (dtype, quantization), not by TRL from the model's folder.
        ref_model=inputs.load_base_model() if inputs.peft_config is None else None,
        args=args,
        **trainer_inputs(rated),
    )


def sequence_lengths(records: Iterable[Record], tokenizer: "PreTrainedTokenizerBase") -> Iterator[RowLengths]:
    """Token count of prompt + completion of each rated answer (of prompt + chosen and prompt + rejected of each
    pair) through the chat template, as KTO's trainer tokenizes it before its collator cuts it at max_length."""
    records = iter(records)
    first = next(records, None)
    if first is None:
        return iter(())
    rows = chain([first], records)
    return preference_sequence_lengths(rows, tokenizer) if "chosen" in first else sft_sequence_lengths(rows, tokenizer)


register_objective(
    ObjectiveSpec(
        name="kto",
        title="Kahneman-Tversky optimisation (KTO)",
        description="Aligns the model with answers rated one by one (thumbs up or down), relative to the frozen base "
        "model: no pairs needed. Takes feedback rows, or preference pairs taken apart into a desirable and an "
        "undesirable answer.",
        dataset_formats=(DatasetFormat.feedback.value, DatasetFormat.preference.value),
        params_model=KtoParams,
        convert_rows=convert_rows,
        build_trainer=build_trainer,
        # rewards/chosen and rewards/rejected: beta times the policy's log-ratio to the reference on the desirable and
        # the undesirable answers of a batch; kl: the batch's estimate of the KL divergence the rewards are measured
        # against.
        metric_keys=("rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen", "logps/rejected", "kl"),
        reports_perplexity=False,
        # The collator cuts prompt + completion at max_length (and the trainer drops a row whose prompt fills it).
        sequence_lengths=sequence_lengths,
        # The policy runs each row with gradients once; the mismatched KL rows go through it and the reference
        # without (no activations kept), as do the rows through the reference.
        sequences_per_example=1,
        keeps_reference_model=True,
        # A preference pair is taken apart into a desirable and an undesirable answer (unpaired_records).
        examples_per_row={DatasetFormat.preference.value: 2},
        learning_rate_scale=0.025,
        eval_loss="mean of the per-example loss over the eval split, the KL term estimated within each eval batch",
        next_stage=None,
    )
)
