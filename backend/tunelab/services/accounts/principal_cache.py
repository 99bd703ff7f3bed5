"""Who a credential is, remembered for a few seconds per process, so that the hot paths (metrics ingest, run lists,
streams) do not read the API token or browser session, its user and their memberships on every request.

Revocation stays immediate. A commit that changes a credential, a user, a membership or a project forgets every
entry of this process at once and tells every other process over Redis (channel `<namespace>:auth`, heard by each
API process's LiveHub). A process that is not hearing that channel remembers nothing, and one that starts hearing
it again forgets what it had, since a change may have been missed meanwhile. Only successful resolutions of API
tokens and browser sessions are remembered; share links are always read, and a failed credential is never kept.
"""

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

from sqlalchemy import event, inspect, select
from sqlalchemy.orm import ORMExecuteState, Session, make_transient_to_detached
from sqlalchemy.orm.attributes import instance_state

from tunelab.core.redis import get_redis
from tunelab.core.security import token_hash
from tunelab.core.settings import get_settings
from tunelab.db.base import utcnow
from tunelab.db.models import ApiToken, Project, ProjectMember, Role, Run, User, UserSession
from tunelab.services.accounts.principal import Principal
from tunelab.services.runs import run_refs

log = logging.getLogger(__name__)

TTL_S = 10.0  # also how late last_used_at may be: it is written when a token is read, at most once a minute
MAX_ENTRIES = 10_000
_CHANGED_KEY = "tunelab_auth_changed"
_WATCHED = (ApiToken, UserSession, User, ProjectMember, Project)
# Columns a request writes while it authenticates; changing them changes nobody's rights.
_BOOKKEEPING = frozenset({"last_used_at", "last_sign_in_at"})


@dataclass(frozen=True)
class _Entry:
    generation: int
    valid_until: float  # time.monotonic()
    expires_at: datetime | None
    via: Literal["anonymous", "session", "token", "share"]
    user: User  # detached; each request gets its own copy (Session.merge, no SQL)
    roles: dict[int, Role]
    session_token: str | None


_lock = threading.Lock()
_entries: dict[str, _Entry] = {}
_generation = 0
_hearing = 0  # LiveHubs of this process subscribed to the invalidation channel


def channel() -> str:
    return f"{get_settings().redis_namespace}:auth"


def credential_key(bearer: str | None, share_token: str | None, session_cookie: str | None) -> str | None:
    """The key of what resolve_principal would use first; None for share links, which are not remembered."""
    if bearer:
        return _token_key(bearer)
    if share_token:
        return None
    if session_cookie:
        return f"session:{token_hash(session_cookie)}"
    return None


@lru_cache(maxsize=1024)
def _token_key(bearer: str) -> str:
    # Remembered per token: hashing was ~4 % of a one-point metrics batch's API CPU (OpenSSL 3 sets up a digest per
    # call), and an SDK sends the same token with every batch.
    return f"token:{token_hash(bearer)}"


def generation() -> int:
    """Take it before reading a credential from SQL, and pass it to `remember`."""
    return _generation


def is_hearing() -> bool:
    """Whether this process remembers credentials at all (some LiveHub of it hears the invalidation channel)."""
    return _hearing > 0


def forget_all() -> None:
    global _generation
    with _lock:
        _generation += 1
        _entries.clear()
    run_refs.forget_all()


def hearing(on: bool) -> None:
    """A hub started (True) or stopped (False) hearing the invalidation channel; either way, what was remembered
    before may have missed a change."""
    global _hearing
    with _lock:
        _hearing += 1 if on else -1
    forget_all()


def _valid_entry(key: str | None) -> _Entry | None:
    entry = _entries.get(key) if key is not None else None
    if entry is None or entry.generation != _generation or time.monotonic() >= entry.valid_until:
        return None
    if entry.expires_at is not None and entry.expires_at <= utcnow():
        return None
    return entry


def recall(session: Session, key: str | None) -> Principal | None:
    """The remembered principal for `key`, with a User of `session`'s own; None when it must be read from SQL."""
    entry = _valid_entry(key)
    if entry is None:
        return None
    user = session.merge(entry.user, load=False)
    return Principal(via=entry.via, user=user, session_token=entry.session_token, roles=dict(entry.roles))


def recall_token_roles(bearer: str) -> dict[int, Role] | None:
    """The project roles of a remembered API token (no User is built: the metrics fast path needs only these);
    None when the token must be read from SQL. The same answer `recall` gives, without a session."""
    entry = _valid_entry(credential_key(bearer, None, None))
    return entry.roles if entry is not None and entry.via == "token" else None


def remember(session: Session, key: str | None, principal: Principal, since_generation: int) -> None:
    """Keep a principal that `session` just resolved (its roles loaded), unless anything changed since
    `since_generation` or nobody would tell this process about a revocation."""
    if key is None or principal.user is None or principal.roles is None or not _hearing:
        return
    found, expires_at = _expiry_of(session, key)
    if not found:
        return
    # A detached copy: the request's own User may still change (or be rolled back) after this.
    user = User(**{attr.key: getattr(principal.user, attr.key) for attr in inspect(User).column_attrs})
    make_transient_to_detached(user)
    entry = _Entry(since_generation, time.monotonic() + TTL_S, expires_at, principal.via, user,
                   dict(principal.roles), principal.session_token)
    with _lock:
        if since_generation != _generation:
            return
        if len(_entries) >= MAX_ENTRIES:
            _entries.clear()
        _entries[key] = entry


def _expiry_of(session: Session, key: str) -> tuple[bool, datetime | None]:
    """(found, expires_at) of the token or browser session behind `key`: one small read, when remembering only."""
    kind, _, digest = key.partition(":")
    model = ApiToken if kind == "token" else UserSession
    row = session.execute(select(model.expires_at).where(model.token_hash == digest)).first()
    return (row is not None, row[0] if row is not None else None)


# Noticing changes ---------------------------------------------------------------------------------------------

def _changes_rights(obj: object, dirty: bool) -> bool:
    if not isinstance(obj, _WATCHED):
        return False
    if not dirty:  # added or deleted
        return True
    changed = {attr.key for attr in instance_state(obj).attrs if attr.history.has_changes()}
    return bool(changed - _BOOKKEEPING)


@event.listens_for(Session, "before_flush")
def _note_flushed_changes(session: Session, _flush_context: object, _instances: object) -> None:
    if any(_changes_rights(obj, False) for obj in (*session.new, *session.deleted)) or any(
            _changes_rights(obj, True) for obj in session.dirty):
        session.info[_CHANGED_KEY] = True
    elif any(isinstance(obj, Run) for obj in session.deleted):
        # A deleted run's id may be given again (SQLite), to a run of another project: services/runs/run_refs forgets.
        session.info[_CHANGED_KEY] = True


@event.listens_for(Session, "do_orm_execute")
def _note_bulk_changes(state: ORMExecuteState) -> None:
    if (state.is_update or state.is_delete) and state.bind_mapper is not None \
            and issubclass(state.bind_mapper.class_, _WATCHED):
        state.session.info[_CHANGED_KEY] = True
    elif state.is_delete and state.bind_mapper is not None and issubclass(state.bind_mapper.class_, Run):
        state.session.info[_CHANGED_KEY] = True


@event.listens_for(Session, "after_commit")
def _announce(session: Session) -> None:
    if not session.info.pop(_CHANGED_KEY, False):
        return
    forget_all()
    try:
        get_redis().publish(channel(), "changed")
    except Exception:  # noqa: BLE001  (processes that cannot hear Redis remember nothing; the TTL bounds the rest)
        log.warning("could not announce a change of rights on %s", channel(), exc_info=True)


@event.listens_for(Session, "after_rollback")
def _drop_note(session: Session) -> None:
    session.info.pop(_CHANGED_KEY, None)
