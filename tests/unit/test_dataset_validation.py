import hashlib
import json

from tunelab.services.catalog.datasets import MAX_REPORTED_ERRORS, length_stats, validate_jsonl
from tunelab.training.formats import DatasetFormat


def jsonl(*rows) -> bytes:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows).encode()


INSTRUCTION = {"instruction": "Add the numbers.", "input": "2 + 3", "output": "5"}


def test_valid_instruction_file_gives_hash_rows_format_and_stats():
    data = jsonl(INSTRUCTION, {"instruction": "Say hi.", "output": "hi"})

    result = validate_jsonl(data, None)

    assert result.is_valid, result.errors
    assert result.format == DatasetFormat.instruction
    assert result.row_count == 2
    assert result.content_hash == hashlib.sha256(data).hexdigest()
    # "Add the numbers.\n\n2 + 3" + "5" and "Say hi." + "hi"
    assert (result.char_stats.min, result.char_stats.max) == (9, 24)
    assert result.char_stats.mean == 16.5


def test_blank_lines_are_skipped_but_counted_in_line_numbers():
    data = b"\n" + jsonl(INSTRUCTION) + b"   \r\n" + jsonl({"instruction": "x"})

    result = validate_jsonl(data, None)

    assert result.row_count == 2
    assert result.errors == [{"line": 4, "field": "output", "message": "Field required"}]


def test_non_object_lines_are_errors_naming_the_type():
    result = validate_jsonl(jsonl(INSTRUCTION, "[1, 2]", '"text"', "null"), None)

    assert [(e["line"], e["message"]) for e in result.errors] == [
        (2, "expected a JSON object, got an array"),
        (3, "expected a JSON object, got a string"),
        (4, "expected a JSON object, got null"),
    ]


def test_every_bad_line_is_reported_not_only_the_first():
    data = jsonl(INSTRUCTION, '{"instruction": "a",', {"instruction": "b", "output": ""}, INSTRUCTION)

    result = validate_jsonl(data, None)

    assert result.error_count == 2
    assert result.errors[0]["line"] == 2
    assert result.errors[0]["message"].startswith("invalid JSON")
    assert result.errors[1]["line"] == 3
    assert result.errors[1]["field"] == "output"
    assert result.summary().startswith("line 2: invalid JSON") and result.summary().endswith("(and 1 more error)")


def test_nested_field_paths_name_the_message():
    data = jsonl({"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]})

    result = validate_jsonl(data, None)

    assert result.format == DatasetFormat.chat
    assert [e["field"] for e in result.errors] == ["messages.1.role"]


def test_undetectable_format_lists_the_accepted_formats_and_keys():
    result = validate_jsonl(jsonl({"question": "q", "answer": "a"}, {"question": "q2"}), None)

    assert result.error_count == 1
    error = result.errors[0]
    assert error["line"] == 1
    assert "answer, question" in error["message"]
    for expected in ("text (text)", "instruction (instruction, output)", "chat (messages)", "preference (chosen"):
        assert expected in error["message"]


def test_format_is_detected_from_the_first_parsable_row():
    result = validate_jsonl(jsonl("not json", {"text": "hello"}), None)

    assert result.format == DatasetFormat.text
    assert [e["line"] for e in result.errors] == [1]


def test_declared_format_mismatch_says_what_the_rows_look_like():
    result = validate_jsonl(jsonl(INSTRUCTION), DatasetFormat.chat)

    assert result.errors[0] == {
        "line": 1,
        "field": None,
        "message": "the format was declared as chat but the rows look like instruction",
    }
    assert {"line": 1, "field": "messages", "message": "Field required"} in result.errors


def test_declared_format_wins_over_detection():
    # Both text and instruction keys: detection says instruction, the declaration says text.
    result = validate_jsonl(jsonl({"text": "t", "instruction": "i", "output": "o"}), DatasetFormat.text)

    assert result.format == DatasetFormat.text
    assert result.errors[0]["message"] == "the format was declared as text but the rows look like instruction"


def test_invalid_utf8_names_the_line():
    data = jsonl(INSTRUCTION) + b'{"text": "caf\xe9"}\n'

    result = validate_jsonl(data, None)

    assert result.errors == [{"line": 2, "field": None, "message": "not valid UTF-8 (byte 14 of the line)"}]


def test_utf8_bom_at_the_start_is_accepted():
    result = validate_jsonl(b"\xef\xbb\xbf" + jsonl({"text": "hello"}), None)

    assert result.is_valid, result.errors


def test_empty_and_blank_only_files_are_errors():
    for data in (b"", b"\n \n\t\n"):
        result = validate_jsonl(data, None)
        assert result.errors == [{"line": None, "field": None, "message": "the file has no rows"}]


def test_error_list_is_capped_but_counts_all():
    result = validate_jsonl(jsonl(*[{"text": ""}] * (MAX_REPORTED_ERRORS + 7)), None)

    assert len(result.errors) == MAX_REPORTED_ERRORS
    assert result.error_count == MAX_REPORTED_ERRORS + 7
    assert result.summary().endswith(f"(and {MAX_REPORTED_ERRORS + 6} more errors)")


def test_preference_length_counts_the_longer_answer():
    result = validate_jsonl(jsonl({"prompt": "ab", "chosen": "c", "rejected": "defg"}), None)

    assert result.format == DatasetFormat.preference
    assert result.char_stats.max == 6


FEEDBACK = {"prompt": "Add the numbers.\n\n2 + 3", "completion": "5", "label": True}


def test_feedback_rows_are_detected_and_their_length_is_prompt_and_completion():
    result = validate_jsonl(jsonl(FEEDBACK, {"prompt": "2 + 2", "completion": "five", "label": False}), None)

    assert result.is_valid, result.errors
    assert result.format == DatasetFormat.feedback
    assert (result.char_stats.min, result.char_stats.max) == (9, 24)


def test_a_feedback_row_needs_every_field_and_a_json_boolean_label():
    data = jsonl(FEEDBACK, {"prompt": "2 + 2", "completion": "4"}, FEEDBACK | {"label": "true"},
                 FEEDBACK | {"label": 1}, FEEDBACK | {"label": None}, {"completion": "4", "label": False},
                 FEEDBACK | {"completion": ""}, FEEDBACK | {"label": False})

    result = validate_jsonl(data, DatasetFormat.feedback)

    assert [(e["line"], e["field"], e["message"]) for e in result.errors] == [
        (2, "label", "Field required"),
        (3, "label", "Input should be a valid boolean"),
        (4, "label", "Input should be a valid boolean"),
        (5, "label", "Input should be a valid boolean"),
        (6, "prompt", "Field required"),
        (7, "completion", "String should have at least 1 character"),
    ]
    assert result.summary().startswith("line 2: label: Field required")


def test_length_stats_uses_nearest_rank_percentiles():
    stats = length_stats(list(range(1, 101)), max_length=90)

    assert (stats.min, stats.p50, stats.p95, stats.max, stats.mean) == (1, 50, 95, 100, 50.5)
    assert stats.over_max_length == 10
    assert length_stats([7]).p95 == 7


def test_a_row_nested_deeper_than_the_parser_recurses_is_an_error_naming_its_line():
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"

    result = validate_jsonl(jsonl({"text": "fine"}, deep), None)

    assert result.errors == [{"line": 2, "field": None, "message": "invalid JSON: nested too deeply"}]
