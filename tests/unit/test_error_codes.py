"""Error codes are one closed list with their HTTP statuses: published in the OpenAPI document (the TypeScript client
gets the list), refused when unknown. An unknown code used to become a 400 silently, and METHOD_NOT_ALLOWED and
HTTP_ERROR, which the app answers with, were in no list."""

import re
from pathlib import Path
from typing import get_args

import pytest

from tunelab.core.errors import STATUS_BY_CODE, AppError, ErrorCode

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "tunelab"
RAISED = re.compile(r'(?<!\w)(?:AppError|_error|error_payload)\(\s*"([A-Z_]+)"')


def test_every_code_the_backend_raises_is_in_the_list_with_a_status():
    raised = {code for path in BACKEND.rglob("*.py") for code in RAISED.findall(path.read_text(encoding="utf-8"))}
    assert len(raised) > 40
    assert raised <= set(get_args(ErrorCode)), raised - set(get_args(ErrorCode))
    assert set(STATUS_BY_CODE) == set(get_args(ErrorCode))
    assert {"METHOD_NOT_ALLOWED", "HTTP_ERROR"} <= set(STATUS_BY_CODE)


def test_an_unknown_code_is_refused_where_it_is_raised_not_answered_as_400():
    with pytest.raises(ValueError, match="unknown error code 'RUN_NOT_FOUNT'"):
        AppError("RUN_NOT_FOUNT", "typo")  # type: ignore[arg-type]
    assert AppError("RUN_IN_USE", "x").status_code == 409


def test_the_openapi_document_publishes_the_codes():
    from tunelab.main import create_app

    schema = create_app().openapi()["components"]["schemas"]["ErrorBody"]["properties"]["code"]
    assert set(schema["enum"]) == set(STATUS_BY_CODE)
