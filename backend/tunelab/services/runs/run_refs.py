"""Which project a run is in and whether it is external, remembered for the life of the API process.

Neither ever changes while the run exists, so the metrics hot path checks the caller's role (from the principal,
itself remembered by principal_cache) without reading the run: no SELECT per logged batch. Roles come from the
principal, which a revocation forgets at once. A run's id can outlive it (SQLite may give a deleted run's id to
the next run, of any project): a deleted run is announced like a change of rights, so every API process forgets
what it remembered here, and ingest's first statement (the flush-number bump) also matches the remembered project
and external flag, so a batch never lands in a run other than the one checked.
"""

import threading
from dataclasses import dataclass

from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.db.models import Role, Run
from tunelab.services.accounts import access
from tunelab.services.accounts.principal import Principal

MAX_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class RunRef:
    id: int
    project_id: int
    external: bool


_lock = threading.Lock()
_refs: dict[int, RunRef] = {}


def forget_all() -> None:
    """Called with principal_cache.forget_all, which hears of every deleted run in any API process."""
    with _lock:
        _refs.clear()


def forget(run_id: int) -> None:
    with _lock:
        _refs.pop(run_id, None)


def recall(run_id: int) -> RunRef | None:
    return _refs.get(run_id)


def _remember(run: Run) -> RunRef:
    ref = RunRef(run.id, run.project_id, run.external)
    with _lock:
        if len(_refs) >= MAX_ENTRIES:
            _refs.clear()
        _refs[run.id] = ref
    return ref


def check_remembered(session: Session, principal: Principal, ref: RunRef, needed: Role, doing: str) -> RunRef:
    """The same answers as access.run for a signed-in caller whose roles are loaded, without SQL."""
    if principal.share is not None or principal.roles is None:
        raise ValueError("check_remembered needs a signed-in principal with its roles loaded")
    if ref.project_id not in principal.roles:
        raise AppError("RUN_NOT_FOUND", f"run {ref.id} does not exist", {"run_id": ref.id})
    access.require_role(session, principal, ref.project_id, needed, doing)
    return ref


def read_and_check(session: Session, principal: Principal, run_id: int, needed: Role, doing: str) -> RunRef:
    """access.run, remembering the run's project for the next request."""
    return _remember(access.run(session, principal, run_id, needed, doing))


def can_check_remembered(principal: Principal) -> bool:
    return principal.share is None and principal.roles is not None and principal.user is not None
