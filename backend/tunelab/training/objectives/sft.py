"""Supervised fine-tuning: loss on the answer only (instruction, chat), or on every token (text)."""

from tunelab.training.formats import DatasetFormat
from tunelab.training.registry import ObjectiveSpec, Record, register_objective


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


register_objective(
    ObjectiveSpec(
        name="sft",
        title="Supervised fine-tuning",
        description="Teaches the model to answer: next-token loss on the response tokens of instruction or chat "
        "examples (on every token of plain text).",
        dataset_formats=(DatasetFormat.instruction.value, DatasetFormat.chat.value, DatasetFormat.text.value),
        convert_rows=convert_rows,
    )
)
