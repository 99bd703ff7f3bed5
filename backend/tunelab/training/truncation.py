"""How much of a dataset a max_length cuts away: the rows longer than it and the tokens past it, counted on the
token sequences the objective's trainer builds, so that the count is what the trainer cuts. Light to import (the
dataset preview uses it too): the tokenizer comes from the caller."""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

TOKENIZE_BATCH = 1000
# A record as an objective's trainer takes it (registry.Record, which this module cannot import: the objectives
# that import this module are imported by the registry).
Record = dict[str, Any]
# The token lengths of one row: one sequence (SFT), or several the trainer cuts each (a preference pair's prompt +
# chosen and prompt + rejected).
RowLengths = int | Sequence[int]


@dataclass(frozen=True)
class TruncationCount:
    rows: int  # rows counted
    truncated_rows: int  # rows with a sequence longer than max_length
    truncated_tokens: int  # tokens past max_length, over all rows and sequences

    def describe(self, max_length: int) -> str:
        share = f" ({100 * self.truncated_rows / self.rows:.1f} %)" if self.rows else ""
        return (f"{self.truncated_rows} of {self.rows} rows{share} are longer than max_length {max_length}; "
                f"{self.truncated_tokens} tokens past it are cut")


def count_truncation(lengths: Iterable[RowLengths], max_length: int) -> TruncationCount:
    """Rows, rows with a sequence over `max_length`, and the tokens over it, for these rows' sequence lengths."""
    rows = truncated_rows = truncated_tokens = 0
    for row in lengths:
        excess = sum(max(0, length - max_length) for length in ((row,) if isinstance(row, int) else row))
        rows += 1
        truncated_rows += excess > 0
        truncated_tokens += excess
    return TruncationCount(rows, truncated_rows, truncated_tokens)


def sft_sequence_lengths(records: Iterable[Record], tokenizer: "PreTrainedTokenizerBase") -> Iterator[int]:
    """Token count of each SFT record as TRL's SFTTrainer tokenizes it before cutting at max_length: a
    conversational prompt and completion, or messages, through the chat template; text with the eos token appended
    and the tokenizer's own special tokens."""
    records = iter(records)
    while batch := list(islice(records, TOKENIZE_BATCH)):
        conversations = [record["prompt"] + record["completion"] if "prompt" in record else record.get("messages")
                         for record in batch]
        chats = [conversation for conversation in conversations if conversation is not None]
        chat_ids = iter(_chat_token_ids(tokenizer, chats) if chats else [])
        texts = [_with_eos(record["text"], tokenizer) for record, conversation in zip(batch, conversations, strict=True)
                 if conversation is None]
        text_ids = iter(tokenizer(texts)["input_ids"] if texts else [])
        for conversation in conversations:
            yield len(next(chat_ids) if conversation is not None else next(text_ids))


def preference_sequence_lengths(records: Iterable[Record],
                                tokenizer: "PreTrainedTokenizerBase") -> Iterator[tuple[int, int]]:
    """Token counts of prompt + chosen and prompt + rejected of each preference record as TRL's DPOTrainer builds
    them before its collator cuts each at max_length: conversational records through the chat template, plain ones
    with the eos token appended to each answer."""
    records = iter(records)
    while batch := list(islice(records, TOKENIZE_BATCH)):
        if isinstance(batch[0]["prompt"], list):
            ids = _chat_token_ids(tokenizer, [record["prompt"] + record[answer] for record in batch
                                              for answer in ("chosen", "rejected")])
        else:
            ids = tokenizer([record["prompt"] + _with_eos(record[answer], tokenizer) for record in batch
                             for answer in ("chosen", "rejected")])["input_ids"]
        lengths = iter(ids)
        for _ in batch:
            yield len(next(lengths)), len(next(lengths))


def _chat_token_ids(tokenizer: "PreTrainedTokenizerBase", chats: list[list[dict[str, Any]]]) -> list[list[int]]:
    # A batch of conversations tokenizes to one list of ids each; the declared return type covers every mode.
    encoded = tokenizer.apply_chat_template(cast(Any, chats), tokenize=True, return_dict=True)
    return cast(list[list[int]], cast(Any, encoded)["input_ids"])


def _with_eos(text: str, tokenizer: "PreTrainedTokenizerBase") -> str:
    eos = tokenizer.eos_token
    return text if not isinstance(eos, str) or text.endswith(eos) else text + eos
