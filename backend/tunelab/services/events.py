"""Live notifications on Redis channel run:<id>, published only after the SQL transaction that they announce commits,
so that a listener who reads SQL on a notification always finds the rows."""

import json
import logging
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from tunelab.core.redis import get_redis

log = logging.getLogger(__name__)
_PENDING_KEY = "tunelab_pending_events"


def run_channel(run_id: int) -> str:
    return f"run:{run_id}"


def publish_after_commit(session: Session, run_id: int, message: dict[str, Any]) -> None:
    session.info.setdefault(_PENDING_KEY, []).append((run_channel(run_id), json.dumps(message)))


def publish_now(run_id: int, message: dict[str, Any]) -> None:
    try:
        get_redis().publish(run_channel(run_id), json.dumps(message))
    except Exception:  # noqa: BLE001  (Redis only carries hints; SQL already has the truth)
        log.warning("could not publish to %s", run_channel(run_id), exc_info=True)


@event.listens_for(Session, "after_commit")
def _publish_pending(session: Session) -> None:
    pending = session.info.pop(_PENDING_KEY, None)
    if not pending:
        return
    try:
        pipe = get_redis().pipeline(transaction=False)
        for channel, payload in pending:
            pipe.publish(channel, payload)
        pipe.execute()
    except Exception:  # noqa: BLE001
        log.warning("could not publish %d live notifications", len(pending), exc_info=True)


@event.listens_for(Session, "after_rollback")
def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)
