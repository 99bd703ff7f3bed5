"""The dataset formats Tunelab accepts, one row model each. Uploads are validated against these and the
engine converts rows of these shapes into what TRL's trainers take."""

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class DatasetFormat(enum.StrEnum):
    text = "text"
    instruction = "instruction"
    chat = "chat"
    preference = "preference"
    feedback = "feedback"
    prompt = "prompt"


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


class FeedbackRow(_Row):
    """One answer rated on its own (thumbs up or down), for KTO: `label` is true when the completion is desirable."""

    prompt: str = Field(min_length=1)
    completion: str = Field(min_length=1)
    label: bool = Field(strict=True)  # a JSON true or false: "yes" or 1 is refused, not read as a rating


class PromptRow(_Row):
    """A prompt for online RL (GRPO, RLOO): the model writes the answers itself; `answer`, when given, is what the
    verifiable rewards (exact or numeric match) check a completion against."""

    prompt: str = Field(min_length=1)
    answer: str | None = None

    @field_validator("answer", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        # {"answer": 42} is as good as {"answer": "42"}; anything else but text is refused in one message.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if value is not None and not isinstance(value, str):
            raise ValueError("should be text or a number")
        return value


Row = TextRow | InstructionRow | ChatRow | PreferenceRow | FeedbackRow | PromptRow

ROW_MODELS: dict[DatasetFormat, type[Row]] = {
    DatasetFormat.text: TextRow,
    DatasetFormat.instruction: InstructionRow,
    DatasetFormat.chat: ChatRow,
    DatasetFormat.preference: PreferenceRow,
    DatasetFormat.feedback: FeedbackRow,
    DatasetFormat.prompt: PromptRow,
}

# Which columns identify a format, checked in this order (preference before instruction: both have a prompt-like key).
SIGNATURE_KEYS: list[tuple[DatasetFormat, frozenset[str]]] = [
    (DatasetFormat.preference, frozenset({"prompt", "chosen", "rejected"})),
    (DatasetFormat.feedback, frozenset({"prompt", "completion", "label"})),
    (DatasetFormat.chat, frozenset({"messages"})),
    (DatasetFormat.instruction, frozenset({"instruction", "output"})),
    (DatasetFormat.text, frozenset({"text"})),
    # A rated answer whose label is missing is a feedback row with an error to name, not a prompt with extra keys.
    (DatasetFormat.feedback, frozenset({"prompt", "completion"})),
    # Last: any format with a prompt and more is one of the above.
    (DatasetFormat.prompt, frozenset({"prompt"})),
]


def detect_format(first_row: dict[str, Any]) -> DatasetFormat | None:
    keys = set(first_row)
    for fmt, signature in SIGNATURE_KEYS:
        if signature <= keys:
            return fmt
    return None
