"""Supervised fine-tuning with TRL's SFTTrainer: loss on the answer only (instruction, chat), or on every token
(text)."""

from typing import TYPE_CHECKING

from pydantic import Field

from tunelab.training.arguments import trainer_arguments, trainer_inputs
from tunelab.training.formats import DatasetFormat
from tunelab.training.registry import ObjectiveParams, ObjectiveSpec, Record, TrainerInputs, register_objective
from tunelab.training.token_weighted_eval import TOKEN_WEIGHTED_EVAL_LOSS, sft_trainer_class
from tunelab.training.truncation import sft_sequence_lengths

if TYPE_CHECKING:
    from trl import SFTTrainer


class SftParams(ObjectiveParams):
    packing: bool = Field(
        False,
        title="Packing",
        description="Pack several examples into each max_length row (best-fit, each attending only to itself): fewer "
        "padding tokens, faster epochs",
    )
    neftune_noise_alpha: float = Field(
        0.0,
        ge=0,
        le=20,
        title="NEFTune noise",
        description="NEFTune: uniform noise on the input embeddings while training, scaled by alpha / √(length × "
        "hidden size), which often improves instruction following (the paper uses 5 to 15; 0: off)",
    )


def instruction_prompt(instruction: str, input_text: str) -> str:
    """The user turn an instruction row becomes: the instruction, then its input after a blank line if any."""
    return f"{instruction}\n\n{input_text}" if input_text else instruction


def convert_rows(rows: list[Record], dataset_format: str) -> list[Record]:
    """Rows of a Tunelab format → TRL SFT records (conversational prompt/completion, messages, or text)."""
    if dataset_format == DatasetFormat.instruction:
        # Conversational prompt/completion: TRL renders it with the chat template and masks the prompt from the loss.
        return [
            {
                "prompt": [{"role": "user", "content": instruction_prompt(row["instruction"], row.get("input", ""))}],
                "completion": [{"role": "assistant", "content": row["output"]}],
            }
            for row in rows
        ]
    if dataset_format == DatasetFormat.chat:
        return [{"messages": [{"role": m["role"], "content": m["content"]} for m in row["messages"]]} for row in rows]
    if dataset_format == DatasetFormat.text:
        return [{"text": row["text"]} for row in rows]
    raise ValueError(f"the sft objective does not take {dataset_format!r} datasets")


def build_trainer(inputs: TrainerInputs) -> "SFTTrainer":
    from trl import SFTConfig

    params: SftParams = inputs.params
    args = SFTConfig(
        **trainer_arguments(inputs),
        assistant_only_loss=inputs.dataset_format == DatasetFormat.chat,
        packing=params.packing,
        neftune_noise_alpha=params.neftune_noise_alpha or None,
    )
    return sft_trainer_class()(
        args=args,
        **trainer_inputs(inputs),
    )


register_objective(
    ObjectiveSpec(
        name="sft",
        title="Supervised fine-tuning",
        description="Teaches the model to answer: next-token loss on the response tokens of instruction or chat "
        "examples (on every token of plain text).",
        dataset_formats=(DatasetFormat.instruction.value, DatasetFormat.chat.value, DatasetFormat.text.value),
        params_model=SftParams,
        convert_rows=convert_rows,
        build_trainer=build_trainer,
        metric_keys=("mean_token_accuracy",),
        # Packed or not, a row longer than max_length is cut (best-fit packing keeps rows whole, up to max_length).
        sequence_lengths=sft_sequence_lengths,
        eval_loss=TOKEN_WEIGHTED_EVAL_LOSS,
        next_stage="dpo",
    )
)
