"""What people change on runs they keep: name, notes and tags, one run at a time or many at once (all or none)."""

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings
from tunelab.db.models import Role, Run, RunTag
from tunelab.schemas.runs import RunsBulkAction, RunUpdate
from tunelab.services.accounts import access, audit
from tunelab.services.accounts.principal import Principal
from tunelab.services.runs import runs
from tunelab.services.runs.run_filters import MAX_TAGS_PER_RUN


def _unique(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


def _too_many(run: Run, count: int) -> AppError:
    message = f"run {run.id} would have {count} tags; a run has at most {MAX_TAGS_PER_RUN}"
    return AppError("VALIDATION_ERROR", f"tags: {message}", [{"field": "tags", "message": message}])


def _current_tags(session: Session, run_id: int) -> list[str]:
    return list(session.scalars(select(RunTag.tag).where(RunTag.run_id == run_id).order_by(RunTag.tag)))


def _replace_tags(session: Session, run: Run, tags: list[str]) -> None:
    if len(tags) > MAX_TAGS_PER_RUN:
        raise _too_many(run, len(tags))
    session.execute(delete(RunTag).where(RunTag.run_id == run.id))
    session.add_all(RunTag(run_id=run.id, tag=tag) for tag in tags)
    session.flush()


def update_run(session: Session, run: Run, body: RunUpdate, principal: Principal) -> Run:
    """Rename, note and tag a run the caller may edit (checked by the route's policy)."""
    changed = body.model_fields_set
    if "name" in changed:
        if body.name is None:
            raise AppError("VALIDATION_ERROR", "name: a run needs a name", [{"field": "name", "message": "required"}])
        run.name = body.name
    if "notes" in changed:
        run.notes = body.notes or None
    if "tags" in changed:
        _replace_tags(session, run, _unique(body.tags or []))
    audit.record(session, run.project_id, principal.actor, "run.update", "run", run.id,
                 f"{principal.actor.label} changed the {', '.join(sorted(changed)) or 'nothing'} of {run.name}")
    session.flush()
    return run


def apply_bulk(session: Session, settings: Settings, body: RunsBulkAction, principal: Principal) -> list[Run]:
    """Apply one action to every run, or to none: any run the caller cannot edit (403/404) or that cannot take the
    action (a running run to delete, a finished one to cancel: 409) raises, and the request's transaction rolls back."""
    run_ids = list(dict.fromkeys(body.run_ids))
    doing = {"tag": "tagging runs", "untag": "untagging runs", "delete": "deleting runs",
             "cancel": "canceling runs"}[body.action]
    targets = [access.run(session, principal, run_id, Role.editor, doing) for run_id in run_ids]
    tags = _unique(body.tags or [])
    if body.action in ("tag", "untag") and not tags:
        raise AppError("VALIDATION_ERROR", f"tags: {body.action} needs at least one tag",
                       [{"field": "tags", "message": "required for this action"}])
    # Newest first: a run that another selected run started from is deleted after it (RUN_IN_USE otherwise).
    ordered = sorted(targets, key=lambda run: run.id, reverse=body.action == "delete")
    for run in ordered:
        match body.action:
            case "tag":
                _replace_tags(session, run, _unique(_current_tags(session, run.id) + tags))
            case "untag":
                session.execute(delete(RunTag).where(RunTag.run_id == run.id, RunTag.tag.in_(tags)))
            case "delete":
                runs.delete_run(session, settings, run.id, principal.actor)
            case "cancel":
                runs.request_cancel(session, run.id, principal.actor)
    session.flush()
    return [] if body.action == "delete" else targets
