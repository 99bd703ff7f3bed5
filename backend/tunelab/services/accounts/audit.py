"""The per-project audit log: one append-only row per launch, cancel, delete, share, revoke and member change."""

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tunelab.db.models import AuditEvent
from tunelab.services.accounts.principal import Actor


def record(session: Session, project_id: int, actor: Actor, action: str, target_type: str, target_id: int | None,
           summary: str, **details: Any) -> None:
    session.add(AuditEvent(project_id=project_id, actor_id=actor.user_id, actor_label=actor.label, action=action,
                           target_type=target_type, target_id=target_id, summary=summary, details=details))


def list_events(session: Session, project_id: int, limit: int, before_id: int | None) -> tuple[list[AuditEvent], int]:
    stmt = select(AuditEvent).where(AuditEvent.project_id == project_id)
    if before_id is not None:
        stmt = stmt.where(AuditEvent.id < before_id)
    events = list(session.scalars(stmt.order_by(AuditEvent.id.desc()).limit(limit)))
    count = session.scalar(select(func.count(AuditEvent.id)).where(AuditEvent.project_id == project_id)) or 0
    return events, count
