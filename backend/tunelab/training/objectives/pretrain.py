"""Continued pretraining with TRL's SFTTrainer on plain text: documents are tokenized, concatenated and cut into
max_length blocks (nothing is truncated away), and the next-token loss counts every token."""

from typing import TYPE_CHECKING

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, Record, TrainerInputs, register_objective
from tunelab.training.token_weighted_eval import TOKEN_WEIGHTED_EVAL_LOSS, sft_trainer_class

if TYPE_CHECKING:
    from trl import SFTTrainer


class PretrainParams(ObjectiveParams):
    """No settings of its own: the block length is max_length."""


def convert_rows(rows: list[Record], dataset_format: str) -> list[Record]:
    if dataset_format != DatasetFormat.text:
        raise ValueError(f"the pretrain objective takes text datasets, not {dataset_format!r}")
    return [{"text": row["text"]} for row in rows]


def build_trainer(inputs: TrainerInputs) -> "SFTTrainer":
    from trl import SFTConfig

    args = SFTConfig(
        **trainer_arguments(inputs),
        dataset_text_field="text",
        # "wrapped": one token stream (an eos closes each document) cut into full blocks, as pretraining does.
        packing=True,
        packing_strategy="wrapped",
        completion_only_loss=False,
    )
    return sft_trainer_class()(
        args=args,
        **trainer_inputs(inputs),
    )


register_objective(
    ObjectiveSpec(
        name="pretrain",
        title="Continued pretraining",
        description="Keeps training the base objective on domain text: documents packed into max_length blocks, "
        "next-token loss on every token, perplexity reported.",
        dataset_formats=(DatasetFormat.text.value,),
        params_model=PretrainParams,
        convert_rows=convert_rows,
        build_trainer=build_trainer,
        metric_keys=("mean_token_accuracy",),
        packs_rows=True,
        eval_loss=TOKEN_WEIGHTED_EVAL_LOSS,
        next_stage="sft",
    )
)
