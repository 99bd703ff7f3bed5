"""What the preference objectives share (DPO, ORPO): turning (prompt, chosen, rejected) rows into TRL's
conversational preference records. Not an objective of its own: it registers nothing."""

from collections.abc import Callable

from tunelab.training.formats import DatasetFormat
from tunelab.training.registry import Record


def preference_records(rows: list[Record]) -> list[Record]:
    """Preference rows → TRL's conversational preference records, rendered with the model's chat template."""
    return [
        {
            "prompt": [{"role": "user", "content": row["prompt"]}],
            "chosen": [{"role": "assistant", "content": row["chosen"]}],
            "rejected": [{"role": "assistant", "content": row["rejected"]}],
        }
        for row in rows
    ]


def preference_converter(objective: str) -> Callable[[list[Record], str], list[Record]]:
    """The convert_rows of a preference objective: its refusals name that objective (ORPO's said "dpo")."""

    def convert_rows(rows: list[Record], dataset_format: str) -> list[Record]:
        if dataset_format != DatasetFormat.preference:
            raise ValueError(f"the {objective} objective takes preference datasets, not {dataset_format!r}")
        return preference_records(rows)

    return convert_rows
