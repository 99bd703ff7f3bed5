"""Merged-model exports: an editor asks for one through the API; a worker of the run's queue merges the run's
adapter into its base and writes `merged/` (Hugging Face format with the tokenizer) into the run's artifacts.

SQL holds each export's state (`run_export`), as it does a run's: the message carries only the export's id, the
claim is one conditional UPDATE (a duplicate delivery exits quietly), and the API reads the state from SQL. The merge
runs in a process of its own, as training does, so the worker stays free of torch. A running export stamps its heartbeat; one whose heartbeat stops lost its worker and is failed the next time
someone asks to export, resume or delete the run."""

import logging
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.processes import die_with_parent
from tunelab.core.settings import Settings, get_settings
from tunelab.db.base import rowcount, utcnow
from tunelab.db.models import ExportStatus, Run, RunExport, RunStatus
from tunelab.db.session import session_scope
from tunelab.services.accounts import audit
from tunelab.services.accounts.principal import Actor
from tunelab.services.catalog.models import worker_model_path
from tunelab.services.live import events
from tunelab.services.runs import artifacts, run_files
from tunelab.training import registry

log = logging.getLogger(__name__)

MERGED_DIR = "merged"
EXPORTABLE_STATUSES = frozenset({RunStatus.succeeded, RunStatus.canceled})  # finished with the adapter they saved


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
    has_adapter = artifacts.has_file(settings, run.id, "adapter/adapter_config.json")
    if artifacts.has_folder(settings, run.id, "model") and not has_adapter:
        raise _not_exportable(run, "full fine-tuning saved the whole model (model/), with no adapter to merge; "
                                   "download model.zip instead")
    if not has_adapter:
        raise _not_exportable(run, "it saved no adapter")
    if not registry.get_method(run.method).mergeable:
        raise _not_exportable(run, f"a {registry.get_method(run.method).title} adapter does not merge into its base (prompt-learning adapters add "
                                   "virtual tokens, not weight changes); use the adapter as it is")


def _running_export(session: Session, run_id: int) -> int | None:
    """The run's export a live worker is merging now. One whose heartbeat stopped lost its worker: it is failed
    here, with the reason, and holds nothing any more."""
    timeout_s = get_settings().heartbeat_timeout_s
    session.execute(update(RunExport).where(RunExport.run_id == run_id, RunExport.status == ExportStatus.running,
                                            RunExport.heartbeat_at < utcnow() - timedelta(seconds=timeout_s))
                    .values(status=ExportStatus.failed, finished_at=utcnow(),
                            status_reason=f"worker lost: no heartbeat for {timeout_s:g} s; ask again"))
    return session.scalar(select(RunExport.id).where(RunExport.run_id == run_id,
                                                     RunExport.status == ExportStatus.running))


def refuse_while_exporting(session: Session, run_id: int, doing: str) -> None:
    """Before a resume or a delete (`doing`: "resume", "delete"), which change or remove the run's files: while a
    worker merges them, EXPORT_IN_PROGRESS (409); an export still queued is withdrawn (failed, with the reason),
    so that its message, when delivered, finds nothing to do."""
    busy = _running_export(session, run_id)
    if busy is not None:
        raise AppError("EXPORT_IN_PROGRESS", f"run {run_id} is being exported (export {busy}); {doing} it once that "
                       "export has ended", {"export_id": busy})
    session.execute(update(RunExport).where(RunExport.run_id == run_id, RunExport.status == ExportStatus.queued)
                    .values(status=ExportStatus.failed, finished_at=utcnow(),
                            status_reason=f"withdrawn: the run was {doing}d before a worker took the export"))


def request_export(session: Session, settings: Settings, run: Run, broker: ExportBroker, actor: Actor) -> RunExport:
    """Queue a merge of the run's adapter into its base, on the run's queue; one at a time per run. Asking while an
    export is still queued sends its message again (one lost with Redis is then replaced; a duplicate delivery
    finds it claimed) and answers that export."""
    check_exportable(settings, run)
    busy = _running_export(session, run.id)
    if busy is not None:
        raise AppError("EXPORT_IN_PROGRESS", f"run {run.id} is being exported (export {busy})", {"export_id": busy})
    export = session.scalar(select(RunExport).where(RunExport.run_id == run.id,
                                                    RunExport.status == ExportStatus.queued))
    if export is None:
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
    settings = get_settings()
    with session_scope() as session:
        claimed = rowcount(session.execute(
            update(RunExport).where(RunExport.id == export_id, RunExport.status == ExportStatus.queued)
            .values(status=ExportStatus.running, started_at=utcnow(), heartbeat_at=utcnow(), worker=worker)))
        export = session.get(RunExport, export_id)
        if not claimed or export is None:
            log.info("export %s is not queued (duplicate delivery, or its run was deleted): dropped", export_id)
            return None
        run_id = export.run_id
    folder = artifacts.run_dir(settings, run_id)
    status, reason = ExportStatus.failed, None
    merged = threading.Event()
    heartbeat = threading.Thread(target=_beat, args=(export_id, settings.heartbeat_interval_s, merged), daemon=True,
                                 name=f"export-heartbeat-{export_id}")
    heartbeat.start()
    try:
        with session_scope() as session:
            config = session.get_one(Run, run_id).config
        folder.mkdir(parents=True, exist_ok=True)
        run_files.pull(settings, run_id, folder, only=("adapter", "tokenizer", artifacts.RUN_LOG_NAME))
        returncode = _merge_in_own_process(settings, folder, config)
        if returncode == 0:
            run_files.publish(settings, run_id, folder)
        if returncode == 0:
            status = ExportStatus.succeeded
        else:
            ended = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
            reason = f"the merge process {ended}; the run's log has its output"
    except Exception as exc:  # noqa: BLE001  (any failure of the merge becomes the export's reason)
        reason = f"{type(exc).__name__}: {exc}"
        log.exception("export %s of run %s failed", export_id, run_id)
    finally:
        merged.set()
        heartbeat.join()
        with session_scope() as session:
            if session.get(Run, run_id) is not None:  # deleted after its export was given up as lost
                try:
                    artifacts.index_run_artifacts(session, settings, run_id)
                except AppError:
                    log.warning("export %s: the artifact store could not be listed", export_id, exc_info=True)
            session.execute(update(RunExport).where(RunExport.id == export_id, RunExport.status == ExportStatus.running)
                            .values(status=status, status_reason=reason, finished_at=utcnow()))
    return status.value


def _merge_in_own_process(settings: Settings, folder: Path, config: dict[str, Any]) -> int:
    """Run the merge in a process of its own (see training.merge), its output appended to the run's log. A run that
    started from other runs' weights merges into its base with theirs applied."""
    starting = [f"--start-from={weights['kind']}={run_files.run_folder(settings, weights['run_id'], weights['kind'])}"
                for weights in config.get("start_from", [])]
    # The base as this worker has it (the merge reads the adapter's own record of it otherwise).
    starting.insert(0, f"--base={worker_model_path(settings, config['model'], config['model_path'])}")
    head = registry.get_objective(config["objective"]).model_head
    with (folder / artifacts.RUN_LOG_NAME).open("ab") as run_log:
        merge = subprocess.run(
            [sys.executable, "-m", "tunelab.training.merge", str(folder / "adapter"), str(folder / "tokenizer"),
             str(folder / MERGED_DIR), *starting, f"--head={head}"],
            stdin=subprocess.DEVNULL, stdout=run_log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
            check=False)
    return merge.returncode


def _beat(export_id: int, interval_s: float, stop: threading.Event) -> None:
    while not stop.wait(interval_s):
        try:
            with session_scope() as session:
                session.execute(update(RunExport).where(RunExport.id == export_id).values(heartbeat_at=utcnow()))
        except Exception:  # noqa: BLE001  (a missed beat is survivable; the next one may succeed)
            log.warning("heartbeat failed for export %s", export_id, exc_info=True)
