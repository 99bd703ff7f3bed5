"""Failed sign-in counters: in Redis, or in SQL while Redis is unreachable, with the same limits and the same 429
either way, so signing in never depends on Redis being up.

No stranger can lock an owner out. Failures lock only where they come from: a client address is refused after
signin_max_attempts_per_address failures, and an email from one address after signin_max_attempts, until the window
(signin_window_s from the first failure) ends. An email is never locked for everyone: past signin_max_attempts
failures from all addresses together, each further failure makes its next sign-in wait 1, 2, 4 … s, up to
signin_email_max_delay_s. A guesser with many addresses is slowed to one guess per wait, and the owner gets in
after at most that wait."""

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

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


@dataclass(frozen=True)
class Attempt:
    """One sign-in's counters, each keyed by a string (Redis keys, and signin_failures rows without Redis)."""

    client_address: str
    email: str

    @property
    def address_key(self) -> str:
        return f"addr:{self.client_address}"

    @property
    def pair_key(self) -> str:
        # An address holds no space; an email may, so it comes last.
        return f"pair:{self.client_address} {self.email}"

    @property
    def email_key(self) -> str:
        return f"email:{self.email}"

    @property
    def wait_key(self) -> str:
        """Present while the email's next sign-in must wait; its time to live is the wait."""
        return f"wait:{self.email}"


def _lock_limits(settings: Settings, attempt: Attempt) -> dict[str, int]:
    """The counters that lock at a limit, with their limits."""
    return {attempt.address_key: settings.signin_max_attempts_per_address,
            attempt.pair_key: settings.signin_max_attempts}


def email_wait_s(settings: Settings, failures: int) -> int:
    """How long an email's next sign-in waits after its `failures`-th failure: none up to signin_max_attempts, then
    1, 2, 4 … s up to signin_email_max_delay_s."""
    beyond = failures - settings.signin_max_attempts
    if beyond <= 0:
        return 0
    return min(2 ** min(beyond - 1, 30), settings.signin_email_max_delay_s)


def _redis_key(settings: Settings, key: str) -> str:
    return f"{settings.redis_namespace}:signin:{key}"


def _too_many(retry_after_s: int) -> AppError:
    return AppError("TOO_MANY_ATTEMPTS", f"too many failed sign-ins; try again in {retry_after_s} s",
                    {"retry_after_s": retry_after_s})


def _redis_unreachable(exc: redis.RedisError) -> None:
    log.warning("Redis unreachable (%s): sign-in counters are kept in the database", type(exc).__name__)


def check(session: Session, settings: Settings, attempt: Attempt) -> None:
    """TOO_MANY_ATTEMPTS while the address or the email from this address is locked, or the email must wait."""
    try:
        retry_after = _redis_retry_after(settings, attempt)
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        retry_after = _sql_retry_after(session, settings, attempt)
    if retry_after is not None:
        raise _too_many(retry_after)


def count_failure(session: Session, settings: Settings, attempt: Attempt) -> None:
    try:
        _redis_count_failure(settings, attempt)
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        _sql_count_failure(session, settings, attempt)


def clear(session: Session, settings: Settings, attempt: Attempt) -> None:
    """Forget the email's failures after its owner signed in (the address's stay counted: an account of one's own
    must not reset the count of one's guesses at others)."""
    keys = [attempt.pair_key, attempt.email_key, attempt.wait_key]
    try:
        get_responsive_redis().delete(*(_redis_key(settings, key) for key in keys))
    except redis.RedisError as exc:
        _redis_unreachable(exc)
        with _own_transaction(session) as own:
            own.execute(delete(table).where(table.c.key.in_(keys)))


# Redis -------------------------------------------------------------------------------------------------------------

def _redis_retry_after(settings: Settings, attempt: Attempt) -> int | None:
    limits = _lock_limits(settings, attempt)
    keys = [*limits, attempt.wait_key]
    pipe = get_responsive_redis().pipeline(transaction=False)
    pipe.mget([_redis_key(settings, key) for key in limits])
    for key in keys:
        pipe.pttl(_redis_key(settings, key))
    counts, *ttls_ms = pipe.execute()
    ttl_ms = dict(zip(keys, ttls_ms, strict=True))
    blocking = [ttl_ms[key] for key, count in zip(limits, counts, strict=True) if int(count or 0) >= limits[key]]
    if ttl_ms[attempt.wait_key] > 0:
        blocking.append(ttl_ms[attempt.wait_key])
    if not blocking:
        return None
    return max(1, math.ceil(max(blocking) / 1000))


def _redis_count_failure(settings: Settings, attempt: Attempt) -> None:
    client = get_responsive_redis()
    pipe = client.pipeline()
    for key in _lock_limits(settings, attempt):
        # The window starts at the first failure. SET NX EX, not EXPIRE NX: the embedded Redis is 6.2.
        pipe.set(_redis_key(settings, key), 0, ex=settings.signin_window_s, nx=True)
        pipe.incr(_redis_key(settings, key))
    # The email's count lasts a window past its last failure: a guesser who keeps on stays slowed.
    pipe.incr(_redis_key(settings, attempt.email_key))
    pipe.expire(_redis_key(settings, attempt.email_key), settings.signin_window_s)
    email_failures = pipe.execute()[-2]
    wait_s = email_wait_s(settings, email_failures)
    if wait_s:
        client.set(_redis_key(settings, attempt.wait_key), 1, ex=wait_s)


# SQL, while Redis is unreachable -------------------------------------------------------------------------------------

def _sql_retry_after(session: Session, settings: Settings, attempt: Attempt) -> int | None:
    now = utcnow()
    limits = {**_lock_limits(settings, attempt), attempt.wait_key: 0}
    rows = session.execute(select(table.c.key, table.c.failures, table.c.window_ends_at).where(
        table.c.key.in_(limits), table.c.window_ends_at > now))
    latest = max((ends for key, failures, ends in rows if failures >= limits[key]), default=None)
    return None if latest is None else max(1, math.ceil((latest - now).total_seconds()))


@contextmanager
def _own_transaction(session: Session) -> Iterator[Session]:
    """A transaction of its own on the request's database: a failure is counted even though the request that
    counts it ends in an error (and so rolls its own transaction back)."""
    with Session(session.get_bind()) as own, own.begin():
        yield own


def _sql_count_failure(session: Session, settings: Settings, attempt: Attempt) -> None:
    now = utcnow()
    window_ends_at = now + timedelta(seconds=settings.signin_window_s)
    with _own_transaction(session) as own:
        insert = pg_insert if own.get_bind().dialect.name == "postgresql" else sqlite_insert
        expired = table.c.window_ends_at <= now

        def upsert(key: str, ends_at: datetime | None) -> int:
            """Count one failure of `key`; its window ends at `ends_at`, or (None) stays as it started."""
            statement = insert(table).values(key=key, failures=1, window_ends_at=ends_at or window_ends_at)
            return own.execute(statement.on_conflict_do_update(index_elements=[table.c.key], set_={
                "failures": case((expired, 1), else_=table.c.failures + 1),
                "window_ends_at": ends_at or case((expired, window_ends_at), else_=table.c.window_ends_at),
            }).returning(table.c.failures)).scalar_one()

        for key in _lock_limits(settings, attempt):
            upsert(key, None)
        wait_s = email_wait_s(settings, upsert(attempt.email_key, window_ends_at))
        if wait_s:
            upsert(attempt.wait_key, now + timedelta(seconds=wait_s))
        # Windows that ended are worth nothing; dropping them here keeps the table as small as the attack.
        keys = [*_lock_limits(settings, attempt), attempt.email_key, attempt.wait_key]
        own.execute(delete(table).where(expired, table.c.key.not_in(keys)))
