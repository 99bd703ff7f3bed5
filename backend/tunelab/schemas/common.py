"""Types shared by the schemas of every resource."""

from typing import Annotated

from pydantic import Field

# Ids are 32-bit INTEGER columns on PostgreSQL (and SQLite refuses integers past 64 bits): a larger id would fail in
# the database instead of being a clean 422.
MAX_ID = 2**31 - 1
MAX_BIGINT = 2**63 - 1
# The objective a run, a study or an estimate takes when none is given (GET /methods marks it is_default).
DEFAULT_OBJECTIVE = "sft"

ResourceId = Annotated[int, Field(ge=1, le=MAX_ID, description="An id, 1 to 2^31-1")]
