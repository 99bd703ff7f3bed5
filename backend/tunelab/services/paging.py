"""Page cursors. A cursor comes back from the client, so it is input like any other: it is checked to be one this API
hands out, and bounded, before any of it reaches SQL or Python (an id past 2^31-1 or an offset past 2^63-1 fails in
the database, `{"o": Infinity}` in int(); each must be a 400 INVALID_CURSOR naming the field, never a 500)."""

import base64
import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.schemas.common import MAX_ID

# Longer than any cursor handed out: {"o": 2147483647} is 28 characters in base64, an id at most 10 digits. Checked
# first, so that a long forged cursor costs no decoding (nor a deeply nested JSON document any recursion).
MAX_CURSOR_LENGTH = 64
# No list holds more rows than there are ids; offset + limit then stays far inside SQL's 64-bit OFFSET.
MAX_OFFSET = MAX_ID


def _invalid() -> AppError:
    return AppError("INVALID_CURSOR", "cursor: not a cursor returned by this API", {"field": "cursor"})


def encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def decode_offset(cursor: str | None) -> int:
    """The row offset an offset cursor (encode_offset's) holds; 0 without a cursor."""
    if not cursor:
        return 0
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise _invalid()
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except ValueError:  # binascii.Error, UnicodeError and JSONDecodeError are all ValueErrors
        raise _invalid() from None
    offset = decoded.get("o") if isinstance(decoded, dict) else None
    # json.loads also gives floats (1e308, Infinity, 1.5) and booleans: only an int in range is one this API wrote.
    if type(offset) is not int or not 0 <= offset <= MAX_OFFSET:
        raise _invalid()
    return offset


def encode_id(last_id: int) -> str:
    return str(last_id)


def decode_id(cursor: str) -> int:
    """The id a keyset cursor (encode_id's) holds: the last id of the previous page, in ASCII digits."""
    # isdigit() alone also passes other scripts' digits and superscripts, which int() refuses or reads as digits.
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= len(str(MAX_ID))):
        raise _invalid()
    last_id = int(cursor)
    if not 1 <= last_id <= MAX_ID:
        raise _invalid()
    return last_id


Row = TypeVar("Row")


@dataclass(frozen=True)
class IdPage(Generic[Row]):
    rows: list[Row]
    count: int
    next_cursor: str | None


def newest_first(session: Session, entity: type[Row], project_ids: list[int], limit: int,
                 cursor: str | None) -> IdPage[Row]:
    """A page of the projects' rows of `entity` (a table with id and project_id: studies, pipelines), newest first;
    the cursor is the id of the previous page's last row."""
    table: Any = entity
    in_projects = table.project_id.in_(project_ids)
    query = select(table).where(in_projects).order_by(table.id.desc()).limit(limit + 1)
    if cursor is not None:
        query = query.where(table.id < decode_id(cursor))
    found = list(session.scalars(query))
    count = session.scalar(select(func.count(table.id)).where(in_projects)) or 0
    page = found[:limit]
    return IdPage(rows=page, count=count, next_cursor=encode_id(page[-1].id) if len(found) > limit else None)
