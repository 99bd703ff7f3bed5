"""Sign-in counters kept in SQL while Redis does not answer (services/accounts/signin_limits), on SQLite and PostgreSQL: the
same locks per address and per email from one address, the same growing wait per email, and the owner's sign-in
clears the email's count."""

import socket

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tunelab.core.errors import AppError
from tunelab.services.accounts import signin_limits
from tunelab.services.accounts.signin_limits import Attempt

EMAIL = "owner@signin-limits.test"


@pytest.fixture
def redis_down(monkeypatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    unreachable = redis.Redis(port=closed_port, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    monkeypatch.setattr(signin_limits, "get_responsive_redis", lambda: unreachable)


def _refused_for(session, settings, attempt: Attempt) -> int:
    with pytest.raises(AppError) as refused:
        signin_limits.check(session, settings, attempt)
    assert refused.value.code == "TOO_MANY_ATTEMPTS"
    return refused.value.details["retry_after_s"]


def test_the_database_keeps_the_limits_while_redis_is_down(session, settings, redis_down):
    limits = settings.model_copy(update={"signin_max_attempts": 2, "signin_max_attempts_per_address": 3,
                                         "signin_email_max_delay_s": 4})
    stranger = Attempt("192.0.2.1", EMAIL)
    for _ in range(limits.signin_max_attempts):
        signin_limits.check(session, limits, stranger)
        signin_limits.count_failure(session, limits, stranger)

    assert 0 < _refused_for(session, limits, stranger) <= limits.signin_window_s
    signin_limits.check(session, limits, Attempt("192.0.2.2", EMAIL))  # the email is not locked elsewhere
    signin_limits.check(session, limits, Attempt("192.0.2.1", "someone-else@signin-limits.test"))

    # Past signin_max_attempts from everywhere, each failure makes the email's next try wait: 1 s, then 2 s.
    signin_limits.count_failure(session, limits, Attempt("192.0.2.2", EMAIL))
    assert _refused_for(session, limits, Attempt("192.0.2.3", EMAIL)) == 1
    signin_limits.count_failure(session, limits, Attempt("192.0.2.4", EMAIL))
    assert _refused_for(session, limits, Attempt("192.0.2.5", EMAIL)) == 2

    signin_limits.count_failure(session, limits, Attempt("192.0.2.1", "guess@signin-limits.test"))
    assert 0 < _refused_for(session, limits, Attempt("192.0.2.1", "guess-2@signin-limits.test"))  # the address

    signin_limits.clear(session, limits, Attempt("192.0.2.5", EMAIL))  # the owner signed in
    signin_limits.check(session, limits, Attempt("192.0.2.6", EMAIL))
