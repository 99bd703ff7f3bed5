"""Executing a run inside a worker: claim it, hand the engine a sink backed by SQL and Redis, keep the
heartbeat, listen for cancel, and record how it ended. The same function serves the Celery task, the CLI
and tests."""

import json
import logging
import platform
import socket
import threading
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from tunelab.core.redis import get_redis
from tunelab.core.settings import Settings, get_settings
from tunelab.db.models import Dataset, RunStatus
from tunelab.db.session import session_scope
from tunelab.services import artifacts, runs
from tunelab.services.datasets import dataset_file
from tunelab.services.events import run_channel
from tunelab.services.metrics import ingest_points

log = logging.getLogger(__name__)
RUN_LOG_NAME = "train.log"
LOGGERS_IN_RUN_LOG = ("tunelab.training", "transformers", "trl", "peft", "accelerate", "tunelab.services.execution")
TRACKED_PACKAGES = ("torch", "transformers", "peft", "trl", "datasets", "accelerate")


def worker_name() -> str:
    return f"{socket.gethostname()}:{threading.get_native_id()}"


def package_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


class SqlRunSink:
    """The engine's RunSink: buffers metric points and flushes them in one statement per batch."""

    MAX_BUFFERED_POINTS = 500

    def __init__(self, run_id: int, flush_interval_s: float) -> None:
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.cancel_event = threading.Event()
        self.current_step = 0
        self._total_steps: int | None = None
        self._progress_dirty = False
        self._buffer: list[tuple[str, int, float, float]] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        with self._lock:
            self._buffer.extend((key, step, float(value), wall_time) for key, value in values.items())
        self._maybe_flush()

    def progress(self, step: int, total_steps: int) -> None:
        self.current_step, self._total_steps, self._progress_dirty = step, total_steps, True
        self._maybe_flush()

    def should_cancel(self) -> bool:
        return self.cancel_event.is_set()

    def set_summary(self, values: dict[str, Any]) -> None:
        with session_scope() as session:
            runs.record_summary(session, self.run_id, values)

    def _maybe_flush(self) -> None:
        due = time.monotonic() - self._last_flush >= self.flush_interval_s
        if due or len(self._buffer) >= self.MAX_BUFFERED_POINTS:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            points, self._buffer = self._buffer, []
            progress_dirty, self._progress_dirty = self._progress_dirty, False
            self._last_flush = time.monotonic()
        if not points and not progress_dirty:
            return
        with session_scope() as session:
            if points:
                ingest_points(session, self.run_id, points)
            if progress_dirty:
                runs.record_progress(session, self.run_id, self.current_step, self._total_steps)


class RunWatch:
    """Background threads for one run: heartbeat into SQL and cancel notices from Redis (SQL as fallback)."""

    def __init__(self, run_id: int, sink: SqlRunSink, settings: Settings) -> None:
        self.run_id, self.sink, self.settings = run_id, sink, settings
        self.cancel_seen_at_step: int | None = None
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._heartbeat, name=f"heartbeat-{run_id}", daemon=True),
            threading.Thread(target=self._listen, name=f"cancel-listener-{run_id}", daemon=True),
        ]

    def __enter__(self) -> "RunWatch":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _cancel(self) -> None:
        if not self.sink.cancel_event.is_set():
            self.cancel_seen_at_step = self.sink.current_step
            self.sink.cancel_event.set()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_interval_s):
            try:
                with session_scope() as session:
                    if runs.beat(session, self.run_id):
                        self._cancel()
            except Exception:  # noqa: BLE001  (a missed beat is survivable; the next one may succeed)
                log.warning("heartbeat failed for run %s", self.run_id, exc_info=True)

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(run_channel(self.run_id))
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message and json.loads(message["data"]).get("type") == "cancel":
                        self._cancel()
                pubsub.close()
            except Exception:  # noqa: BLE001  (Redis away: the heartbeat's SQL check still sees a cancel)
                log.warning("cancel listener lost Redis for run %s; retrying", self.run_id, exc_info=True)
                self._stop.wait(2)


def _attach_run_log(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in LOGGERS_IN_RUN_LOG:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
    return handler


def _detach_run_log(handler: logging.Handler) -> None:
    for name in LOGGERS_IN_RUN_LOG:
        logging.getLogger(name).removeHandler(handler)
    handler.close()


def execute_run(run_id: int, worker: str | None = None) -> str | None:
    """Train one run to its end. Returns the final status, or None when the run was not ours to train."""
    from tunelab.training.engine import run_training
    from tunelab.training.sink import TrainingJob

    settings = get_settings()
    worker = worker or worker_name()
    with session_scope() as session:
        if not runs.claim_run(session, run_id, worker):
            log.info("run %s is not queued (duplicate delivery, or canceled); nothing to do", run_id)
            return None
        run = runs.get_run(session, run_id)
        config = dict(run.config)
        runs.record_versions(session, run_id, package_versions())

    output_dir = runs.run_dir(settings, run_id)
    output_dir.mkdir(parents=True, exist_ok=True)
    handler = _attach_run_log(output_dir / RUN_LOG_NAME)
    sink = SqlRunSink(run_id, settings.metrics_flush_interval_s)
    status, reason = RunStatus.failed, None
    watch = RunWatch(run_id, sink, settings)
    try:
        log.info("run %s claimed by %s: %s %s on %s", run_id, worker, config["objective"], config["method"],
                 config["model"])
        job = TrainingJob(
            objective=config["objective"], method=config["method"], model=config["model_path"],
            dataset_path=_dataset_file(settings, run_id), dataset_format=config["dataset"]["format"],
            params=config["params"], output_dir=output_dir,
        )
        with watch:
            result = run_training(job, sink)
        if result.canceled:
            status = RunStatus.canceled
            reason = f"canceled by user at step {sink.current_step}"
            if watch.cancel_seen_at_step is not None:
                reason += f" (cancel seen at step {watch.cancel_seen_at_step})"
        else:
            status = RunStatus.succeeded
    except Exception as exc:  # noqa: BLE001  (any failure of the run becomes its status reason)
        reason = f"{type(exc).__name__}: {exc}"
        log.error("run %s failed\n%s", run_id, traceback.format_exc())
    finally:
        try:
            sink.flush()
        except Exception:  # noqa: BLE001
            log.warning("final metrics flush failed for run %s", run_id, exc_info=True)
        _detach_run_log(handler)
        with session_scope() as session:
            artifacts.index_run_artifacts(session, run_id, output_dir)
            runs.finish_run(session, run_id, status, reason)
    return status.value


def _dataset_file(settings: Settings, run_id: int) -> Path:
    with session_scope() as session:
        run = runs.get_run(session, run_id)
        dataset = session.get(Dataset, run.dataset_id) if run.dataset_id else None
        if dataset is None:
            raise FileNotFoundError(f"the dataset of run {run_id} was deleted")
        return dataset_file(settings, dataset)
