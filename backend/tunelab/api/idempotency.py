"""The `Idempotency-Key` header of the launch routes (POST /runs, clone, studies), declared once so that the OpenAPI
document and the generated client know it; services.runs.idempotency does the work."""

from typing import Annotated, Any

from fastapi import Header, Request, Response
from pydantic import BaseModel

from tunelab.services.accounts.principal import Principal
from tunelab.services.runs.idempotency import HEADER, KeyedRequest, Launched, keyed_request

REPLAYED_HEADER = "Idempotent-Replayed"

IdempotencyKeyHeader = Annotated[str | None, Header(
    alias=HEADER, min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$",
    description="Any unique string (a UUID) of printable ASCII: a retry with the same key gets what the first "
    "request created (201, with `Idempotent-Replayed: true`) instead of launching again; the same key with another "
    "body is a 422. Kept for TUNELAB_IDEMPOTENCY_KEY_TTL_HOURS (24 h)")]

# A replay answers as the first request did (201 and the resource as it is now): a client that retries after a
# timeout never saw the first answer, so to it the retry is the creation. The header tells the two apart.
REPLAYED_RESPONSE: dict[int | str, dict[str, Any]] = {201: {"headers": {REPLAYED_HEADER: {
    "description": "`true` when an earlier request with the same Idempotency-Key created this resource",
    "schema": {"type": "string"}}}}}


def keyed(principal: Principal, key: str | None, request: Request, body: BaseModel | None) -> KeyedRequest | None:
    """The launch as services.runs.idempotency compares it: the caller, the key, the method and path, the body."""
    if key is None:
        return None
    endpoint = f"{request.method} {request.url.path}"
    return keyed_request(principal.signed_in_user.id, key, endpoint, body.model_dump(mode="json") if body else {})


def mark_replayed(response: Response, launched: Launched) -> None:
    if launched.replayed:
        response.headers[REPLAYED_HEADER] = "true"
