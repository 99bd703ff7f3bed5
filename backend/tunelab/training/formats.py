"""The dataset formats Tunelab accepts, one row model each. Uploads are validated against these and the
engine converts rows of these shapes into what TRL's trainers take."""

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class DatasetFormat(enum.StrEnum):
    text = "text"
    instruction = "instruction"
    chat = "chat"
    preference = "preference"


class _Row(BaseModel):
    # Extra columns are tolerated (ids, sources); the engine reads only the declared ones.
    model_config = ConfigDict(extra="allow", str_strip_whitespace=False)


class TextRow(_Row):
    text: str = Field(min_length=1)


class InstructionRow(_Row):
    instruction: str = Field(min_length=1)
    input: str = ""
    output: str = Field(min_length=1)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRow(_Row):
    messages: list[ChatMessage] = Field(min_length=1)


class PreferenceRow(_Row):
    prompt: str = Field(min_length=1)
    chosen: str = Field(min_length=1)
    rejected: str = Field(min_length=1)


Row = TextRow | InstructionRow | ChatRow | PreferenceRow

ROW_MODELS: dict[DatasetFormat, type[Row]] = {
    DatasetFormat.text: TextRow,
    DatasetFormat.instruction: InstructionRow,
    DatasetFormat.chat: ChatRow,
    DatasetFormat.preference: PreferenceRow,
}

# Which columns identify a format, checked in this order (preference before instruction: both have a prompt-like key).
SIGNATURE_KEYS: list[tuple[DatasetFormat, frozenset[str]]] = [
    (DatasetFormat.preference, frozenset({"prompt", "chosen", "rejected"})),
    (DatasetFormat.chat, frozenset({"messages"})),
    (DatasetFormat.instruction, frozenset({"instruction", "output"})),
    (DatasetFormat.text, frozenset({"text"})),
]


def detect_format(first_row: dict[str, Any]) -> DatasetFormat | None:
    keys = set(first_row)
    for fmt, signature in SIGNATURE_KEYS:
        if signature <= keys:
            return fmt
    return None
