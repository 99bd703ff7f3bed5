"""Failed sign-in counters per client address and per email: in Redis, or in SQL while Redis is unreachable, with
the same limits and the same 429 either way, so signing in never depends on Redis being up.

A window starts at the first failure and lasts signin_window_s; reaching signin_max_attempts failures within it
refuses further sign-ins until it ends."""

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import redis
from sqlalchemy import case, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.redis import get_responsive_redis
from tunelab.core.settings import Settings
from tunelab.db.base import table_of, utcnow
from tunelab.db.models import SigninFailures

log = logging.getLogger(__name__)

table = table_of(SigninFailures)


def attempt_keys(client_address: str, email: str) -> list[str]:
    """The counters a sign-in is checked against: its client address's and its email's."""
    return [f"addr:{client_address}", f"email:{email}"]


def _redis_key(settings: Settings, key: str) -> str:
    return f"{settings.redis_namespace}:signin:{key}"


def _too_many(retry_after_s: int) -> AppError:
    return AppError("TOO_MANY_ATTEMPTS", f"too many failed sign-ins; try again in {retry_after_s} s",
                    {"retry_after_s": retry_after_s})


def _redis_unreachable(exc: redis.RedisError) -> None:
    log.warning("Redis unreachable (%s): sign-in counters are kept in the database", type(exc).__name__)


def check(session: Session, settings: Settings, keys: list[str]) -> None:
    """TOO_MANY_ATTEMPTS while any of the counters is at the limit."""
    try:
        retry_after = _redis_retry_after(settings, keys)
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        retry_after = _sql_retry_after(session, settings, keys)
    if retry_after is not None:
        raise _too_many(retry_after)


def count_failure(session: Session, settings: Settings, keys: list[str]) -> None:
    try:
        pipe = get_responsive_redis().pipeline()
        for key in keys:
            # The window starts at the first failure. SET NX EX, not EXPIRE NX: the embedded Redis is 6.2.
            pipe.set(_redis_key(settings, key), 0, ex=settings.signin_window_s, nx=True)
            pipe.incr(_redis_key(settings, key))
        pipe.execute()
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        _sql_count_failure(session, settings, keys)


def clear(session: Session, settings: Settings, key: str) -> None:
    """Forget a counter (an email's, after its owner signed in)."""
    try:
        get_responsive_redis().delete(_redis_key(settings, key))
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        with _own_transaction(session) as own:
            own.execute(delete(table).where(table.c.key == key))


def _redis_retry_after(settings: Settings, keys: list[str]) -> int | None:
    client = get_responsive_redis()
    redis_keys = [_redis_key(settings, key) for key in keys]
    counts = [int(count or 0) for count in client.mget(redis_keys)]
    at_limit = [key for key, count in zip(redis_keys, counts, strict=True) if count >= settings.signin_max_attempts]
    if not at_limit:
        return None
    return max(1, max(client.ttl(key) for key in at_limit))


def _sql_retry_after(session: Session, settings: Settings, keys: list[str]) -> int | None:
    now = utcnow()
    ends = session.scalars(select(table.c.window_ends_at).where(
        table.c.key.in_(keys), table.c.window_ends_at > now, table.c.failures >= settings.signin_max_attempts))
    latest = max(ends, default=None)
    return None if latest is None else max(1, math.ceil((latest - now).total_seconds()))


@contextmanager
def _own_transaction(session: Session) -> Iterator[Session]:
    """A transaction of its own on the request's database: a failure is counted even though the request that
    counts it ends in an error (and so rolls its own transaction back)."""
    with Session(session.get_bind()) as own, own.begin():
        yield own


def _sql_count_failure(session: Session, settings: Settings, keys: list[str]) -> None:
    now = utcnow()
    window_ends_at = now + timedelta(seconds=settings.signin_window_s)
    with _own_transaction(session) as own:
        insert = pg_insert if own.get_bind().dialect.name == "postgresql" else sqlite_insert
        expired = table.c.window_ends_at <= now
        for key in keys:
            statement = insert(table).values(key=key, failures=1, window_ends_at=window_ends_at)
            own.execute(statement.on_conflict_do_update(index_elements=[table.c.key], set_={
                "failures": case((expired, 1), else_=table.c.failures + 1),
                "window_ends_at": case((expired, window_ends_at), else_=table.c.window_ends_at),
            }))
        # Windows that ended are worth nothing; dropping them here keeps the table as small as the attack.
        own.execute(delete(table).where(expired, table.c.key.not_in(keys)))
