"""Merged-model exports: an editor asks for one through the API; a worker of the run's queue merges the run's
adapter into its base and writes `merged/` (Hugging Face format with the tokenizer) into the run's artifacts.

SQL holds each export's state (`run_export`), as it does a run's: the message carries only the export's id, the
claim is one conditional UPDATE (a duplicate delivery exits quietly), and the API reads the state from SQL. The merge
runs in the worker's pool process itself: it measures nothing, so it needs no fresh process of its own as a run
does. An export whose worker dies stays `running`; nothing resumes it (asking again is refused while it shows so)."""

import json
import logging
from typing import Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings, get_settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import ExportStatus, Run, RunExport, RunStatus
from tunelab.db.session import session_scope
from tunelab.services import artifacts, audit, events
from tunelab.services.principal import Actor
from tunelab.training.merge import MERGEABLE_PEFT_TYPES

log = logging.getLogger(__name__)

MERGED_DIR = "merged"
EXPORTABLE_STATUSES = frozenset({RunStatus.succeeded, RunStatus.canceled})  # finished with the adapter they saved
IN_PROGRESS = (ExportStatus.queued, ExportStatus.running)


class ExportBroker(Protocol):
    """Where export messages go; the worker package implements it for Celery on Redis."""

    def send_export(self, export_id: int, queue: str) -> None:
        """Put one export_run message on `queue`; raises when the broker is unreachable."""
        ...


def _not_exportable(run: Run, why: str) -> AppError:
    return AppError("RUN_NOT_EXPORTABLE", f"run {run.id} cannot be merged: {why}", {"status": run.status.value})


def check_exportable(settings: Settings, run: Run) -> None:
    """RUN_NOT_EXPORTABLE (409) unless the run is finished with a saved adapter of a kind that merges."""
    if run.external:
        raise _not_exportable(run, "it was trained outside Tunelab, which holds no adapter of it")
    if run.status not in EXPORTABLE_STATUSES:
        raise _not_exportable(run, f"it is {run.status.value}; only a succeeded or canceled run has a final adapter")
    folder = artifacts.run_dir(settings, run.id)
    if (folder / "model").is_dir() and not (folder / "adapter").is_dir():
        raise _not_exportable(run, "full fine-tuning saved the whole model (model/), with no adapter to merge; "
                                   "download model.zip instead")
    adapter_config = folder / "adapter" / "adapter_config.json"
    if not adapter_config.is_file():
        raise _not_exportable(run, "it saved no adapter")
    peft_type = json.loads(adapter_config.read_text(encoding="utf-8")).get("peft_type")
    if peft_type not in MERGEABLE_PEFT_TYPES:
        raise _not_exportable(run, f"a {peft_type} adapter adds virtual tokens, not weight changes: there is nothing "
                                   "to merge; use the adapter as it is")


def refuse_while_exporting(session: Session, run_id: int, doing: str) -> None:
    """EXPORT_IN_PROGRESS (409) while a worker merges the run's adapter: a second export, a resume or a delete would
    write or remove the files it reads and writes."""
    busy = session.scalar(select(RunExport.id).where(RunExport.run_id == run_id, RunExport.status.in_(IN_PROGRESS)))
    if busy is not None:
        raise AppError("EXPORT_IN_PROGRESS", f"run {run_id} is being exported (export {busy}); {doing} it once that "
                       "export has ended", {"export_id": busy})


def request_export(session: Session, settings: Settings, run: Run, broker: ExportBroker, actor: Actor) -> RunExport:
    """Queue a merge of the run's adapter into its base, on the run's queue; one at a time per run."""
    check_exportable(settings, run)
    refuse_while_exporting(session, run.id, "export")
    export = RunExport(run_id=run.id, status=ExportStatus.queued, requested_by=actor.label)
    session.add(export)
    session.flush()
    audit.record(session, run.project_id, actor, "run.export", "run", run.id,
                 f"{actor.label} asked for a merged model of {run.name}", export_id=export.id)
    export_id, run_queue = export.id, run.queue
    events.call_after_commit(session, lambda: _send(broker, export_id, run_queue))
    session.refresh(export)
    return export


def _send(broker: ExportBroker, export_id: int, queue: str) -> None:
    """After the commit: send the message; if the broker is away, the export fails now with the reason, so that
    nobody waits on a message that was never sent (asking again sends a new one)."""
    try:
        broker.send_export(export_id, queue)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not send export %s", export_id, exc_info=True)
        with session_scope() as session:
            session.execute(update(RunExport).where(RunExport.id == export_id, RunExport.status == ExportStatus.queued)
                            .values(status=ExportStatus.failed, finished_at=utcnow(),
                                    status_reason=f"the queue was unreachable ({type(exc).__name__}); ask again"))


def list_exports(session: Session, run_id: int) -> list[RunExport]:
    """The run's exports, newest first."""
    return list(session.scalars(select(RunExport).where(RunExport.run_id == run_id).order_by(RunExport.id.desc())))


def execute_export(export_id: int, worker: str) -> str | None:
    """Claim the export and merge. Returns its final status, or None when it was not ours (a duplicate delivery,
    or its run was deleted)."""
    from tunelab.training.merge import merge_adapter

    settings = get_settings()
    with session_scope() as session:
        claimed = rowcount(session.execute(
            update(RunExport).where(RunExport.id == export_id, RunExport.status == ExportStatus.queued)
            .values(status=ExportStatus.running, started_at=utcnow(), worker=worker)))
        export = session.get(RunExport, export_id)
        if not claimed or export is None:
            log.info("export %s is not queued (duplicate delivery, or its run was deleted): dropped", export_id)
            return None
        run_id = export.run_id
    folder = artifacts.run_dir(settings, run_id)
    status, reason = ExportStatus.failed, None
    try:
        merge_adapter(folder / "adapter", folder / "tokenizer", folder / MERGED_DIR)
        status = ExportStatus.succeeded
    except Exception as exc:  # noqa: BLE001  (any failure of the merge becomes the export's reason)
        reason = f"{type(exc).__name__}: {exc}"
        log.exception("export %s of run %s failed", export_id, run_id)
    finally:
        with session_scope() as session:
            if session.get(Run, run_id) is not None:
                artifacts.index_run_artifacts(session, run_id, folder)
            session.execute(update(RunExport).where(RunExport.id == export_id)
                            .values(status=status, status_reason=reason, finished_at=utcnow()))
    return status.value
