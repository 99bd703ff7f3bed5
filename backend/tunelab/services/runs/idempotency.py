"""Launches that are safe to retry. The first request with an `Idempotency-Key` creates a run or a study; a retry with
the same key, by the same user, to the same endpoint with the same body gets that one back instead of a second.

As in the IETF draft (draft-ietf-httpapi-idempotency-key-header) and Stripe: keys are the caller's (two users may
pick the same one), a key sent again with another body is refused (422), a request that arrives while the first one
with its key is still in flight is refused (409, nothing launched: sent again, it gets the first one's answer), and
keys are kept for a bounded time (idempotency_key_ttl_hours, then the reaper purges them). The key is recorded in the
launch's own transaction, after what it created: a refused launch (a 422) leaves no key behind, so its retry is
checked anew, and on SQLite the database's one write lock is not held while the launch is checked.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.base import rowcount, table_of, utcnow
from tunelab.db.models import IdempotencyKey

table = table_of(IdempotencyKey)
HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class KeyedRequest:
    """A launch sent with an Idempotency-Key: who sent it, the key, and what it asked for."""

    user_id: int
    key: str
    endpoint: str  # "POST /api/v1/runs"
    request_hash: str  # of the endpoint and the validated body, so that key order and spacing do not matter


def keyed_request(user_id: int, key: str, endpoint: str, body: dict[str, Any]) -> KeyedRequest:
    canonical = json.dumps([endpoint, body], sort_keys=True, separators=(",", ":"), default=str)
    return KeyedRequest(user_id, key, endpoint, hashlib.sha256(canonical.encode()).hexdigest())


@dataclass(frozen=True)
class Launched:
    """The id of what a launch created, and whether an earlier request with the same key created it."""

    resource_id: int
    replayed: bool


def launch_once(session: Session, settings: Settings, request: KeyedRequest | None,
                launch: Callable[[], int]) -> Launched:
    """Call `launch` (it creates a run or a study and returns its id), unless an earlier request with the same key
    already did: then that one's id. Without a key every call launches."""
    if request is None:
        return Launched(launch(), replayed=False)
    earlier = _earlier(session, settings, request)
    if earlier is not None:
        return Launched(earlier, replayed=True)
    resource_id = launch()
    _remember(session, settings, request, resource_id)
    return Launched(resource_id, replayed=False)


def _of(request: KeyedRequest) -> Any:
    return (table.c.user_id == request.user_id) & (table.c.key == request.key)


def _cutoff(settings: Settings) -> datetime:
    return utcnow() - timedelta(hours=settings.idempotency_key_ttl_hours)


def _earlier(session: Session, settings: Settings, request: KeyedRequest) -> int | None:
    """What the first request with this key created; None when the key is new (or past its time)."""
    earlier = session.execute(select(table.c.endpoint, table.c.request_hash, table.c.resource_id)
                              .where(_of(request), table.c.created_at >= _cutoff(settings))).one_or_none()
    if earlier is None:
        return None
    if earlier.request_hash != request.request_hash:
        message = (f"already used for {earlier.endpoint} with another body; a new launch needs a new key (a retry "
                   "sends the first one's body again)")
        raise AppError("IDEMPOTENCY_KEY_REUSED", f"{HEADER}: {message}",
                       {"field": HEADER, "message": message, "first_used_for": earlier.endpoint})
    return int(earlier.resource_id)


def _remember(session: Session, settings: Settings, request: KeyedRequest, resource_id: int) -> None:
    # A key past its time is forgotten here already, not only at the reaper's next purge.
    session.execute(delete(table).where(_of(request), table.c.created_at < _cutoff(settings)))
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    remembered = session.execute(
        insert(table).values(user_id=request.user_id, key=request.key, endpoint=request.endpoint,
                             request_hash=request.request_hash, resource_id=resource_id, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["user_id", "key"]).returning(table.c.id)).scalar_one_or_none()
    if remembered is None:
        # Another request with this key committed while this one launched (on PostgreSQL the insert waited for it):
        # this launch is rolled back with the transaction, and the retry gets the other one's answer.
        raise AppError("IDEMPOTENCY_KEY_IN_USE", f"{HEADER}: another request with this key was being processed at "
                       "the same time; nothing was launched by this one: send it again to get the other's answer",
                       {"field": HEADER})


def purge_expired(session: Session, settings: Settings) -> int:
    """Forget the keys older than idempotency_key_ttl_hours; how many went."""
    return rowcount(session.execute(delete(table).where(table.c.created_at < _cutoff(settings))))
