"""Training one claimed run, inside its own training process (`tunelab train RUN_ID --attempt N`, started by the
worker's supervisor): hand the engine a sink backed by SQL and Redis, listen for cancel, record how it ended.
The same function serves the worker, the CLI and tests."""

import logging
import os
import platform
import signal
import sys
import threading
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, BinaryIO

from tunelab.core.errors import AppError
from tunelab.core.settings import Settings, get_settings
from tunelab.db.models import Dataset, Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.services.catalog.datasets import dataset_file
from tunelab.services.catalog.models import model_identity, worker_model_path
from tunelab.services.live.events import wait_for_notice
from tunelab.services.metrics import MetricPoint, ingest_points
from tunelab.services.runs import artifacts, lifecycle, run_files
from tunelab.services.runs.runs import RunConfig, training_config
from tunelab.training.adapters import name_base_by_id
from tunelab.training.distributed import is_main_process, process_count, process_rank
from tunelab.training.sink import RunPhase, RunSummary, ScoringModel, SilentSink, StartingWeights, TrainingJob
from tunelab.training.write_failures import disk_full_reason, is_disk_full, remove_incomplete_checkpoints

log = logging.getLogger(__name__)
LOGGERS_IN_RUN_LOG = ("tunelab", "transformers", "trl", "peft", "accelerate")
TRACKED_PACKAGES = ("torch", "transformers", "peft", "trl", "datasets", "accelerate")


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

    def __init__(self, run_id: int, flush_interval_s: float, output_dir: Path, prior_wall_time_s: float = 0.0) -> None:
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.output_dir = output_dir
        self.cancel_event = threading.Event()
        # Set by SIGTERM from the supervisor when its worker shuts down: stop at a checkpoint, and go back to the queue.
        self.preempt_event = threading.Event()
        self.current_step = 0
        # Wall time of the run's earlier attempts: a resumed run's wall time is the sum of all of them.
        self._prior_wall_time_s = prior_wall_time_s
        self._started = time.monotonic()
        self._total_steps: int | None = None
        self._progress_dirty = False
        self._phase: str | None = None
        self._buffer: list[MetricPoint] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def phase(self, phase: RunPhase) -> None:
        # Written at once, not with the next flush: a phase is what a viewer reads while no step moves. The steps and
        # points buffered so far land first, so that "evaluating" does not show beside the previous step's count.
        if phase != self._phase:
            self._phase = phase
            self.flush()
            with session_scope() as session:
                lifecycle.record_phase(session, self.run_id, phase)

    def log_metrics(self, step: int, values: dict[str, float], wall_time: float) -> None:
        with self._lock:
            self._buffer.extend((key, step, float(value), wall_time) for key, value in values.items())
        self._maybe_flush()

    def progress(self, step: int, total_steps: int) -> None:
        self.current_step, self._total_steps, self._progress_dirty = step, total_steps, True
        self._maybe_flush()

    def should_cancel(self) -> bool:
        return self.cancel_event.is_set() or self.preempt_event.is_set()

    @property
    def preempted(self) -> bool:
        return self.preempt_event.is_set() and not self.cancel_event.is_set()

    def set_summary(self, values: RunSummary) -> None:
        if "wall_time_s" in values:
            values = {**values, "wall_time_s": self._prior_wall_time_s + values["wall_time_s"]}
        with session_scope() as session:
            lifecycle.record_summary(session, self.run_id, values)

    def checkpoint_saved(self, step: int) -> None:
        self.flush()  # the metrics up to the checkpoint land first
        settings = get_settings()
        # In the store before SQL names it: a resume on any host then finds the checkpoint it is told of.
        run_files.sync_checkpoints(settings, self.run_id, self.output_dir)
        with session_scope() as session:
            lifecycle.record_checkpoint(session, settings, self.run_id, step)

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
                lifecycle.record_progress(session, self.run_id, self.current_step, self._total_steps)
                # Kept current as it trains, so a run whose process is killed still shows how long it trained.
                lifecycle.record_summary(session, self.run_id, {
                    "wall_time_s": self._prior_wall_time_s + time.monotonic() - self._started})


class CancelWatch:
    """A background thread for one run: cancel notices from Redis, with SQL as the fallback (a force stop is left to
    the supervisor, which kills the process). It also ends this process if the worker that started it is gone
    (where the OS cannot be asked to, as on macOS)."""

    def __init__(self, run_id: int, sink: SqlRunSink, settings: Settings) -> None:
        self.run_id, self.sink, self.settings = run_id, sink, settings
        self.cancel_seen_at_step: int | None = None
        self._parent = os.getppid()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._listen, name=f"cancel-listener-{run_id}", daemon=True),
            threading.Thread(target=self._poll, name=f"cancel-poll-{run_id}", daemon=True),
        ]

    def __enter__(self) -> "CancelWatch":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _cancel(self) -> None:
        if not self.sink.cancel_event.is_set():
            self.cancel_seen_at_step = self.sink.current_step
            log.info("run %s: cancel seen at step %d", self.run_id, self.cancel_seen_at_step)
            self.sink.cancel_event.set()

    def _poll(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_interval_s):
            if os.getppid() != self._parent:
                log.error("run %s: the worker that started this training process is gone; stopping", self.run_id)
                os._exit(1)
            try:
                with session_scope() as session:
                    requests = lifecycle.stop_requests(session, self.run_id)
                    if requests.cancel and not requests.force:
                        self._cancel()
            except Exception:  # noqa: BLE001  (the database away for a moment; the next poll may succeed)
                log.warning("cancel poll failed for run %s", self.run_id, exc_info=True)

    def _listen(self) -> None:
        # A force stop is the supervisor's to carry out (it kills this process group): stopping gracefully as well
        # raced it, and a run force-stopped at a quick step could end as an ordinary cancel.
        wait_for_notice(self.run_id, frozenset({"cancel"}), self._cancel, self._stop, "the cancel listener")


def wait_for_claimed_run(commands: BinaryIO) -> tuple[int, int] | None:
    """A warm training process: load what training needs, then wait for the run its supervisor claims, sent as one
    line `RUN_ID ATTEMPT` on `commands`; from then on its output goes to that run's train.log, as a training process
    started for the run writes there. Returns (run id, attempt), or None when `commands` ends with no run (the
    supervisor is gone, or let it go)."""
    from tunelab.training.engine import preload

    preload()
    line = commands.readline()
    if not line.strip():
        return None
    run_id, attempt = (int(part) for part in line.split())
    folder = artifacts.run_dir(get_settings(), run_id)  # made by the supervisor before it hands the run over
    sys.stdout.flush()
    sys.stderr.flush()
    with (folder / artifacts.RUN_LOG_NAME).open("ab") as run_log:
        os.dup2(run_log.fileno(), sys.stdout.fileno())
        os.dup2(run_log.fileno(), sys.stderr.fileno())
    return run_id, attempt


def configure_run_log() -> None:
    """The training process writes its log to stderr, which its supervisor points at the run's train.log."""
    import faulthandler

    faulthandler.enable()  # a crash in native code still leaves a traceback in train.log
    handler = logging.StreamHandler(sys.stderr)
    # The ranks of a multi-process run share one train.log: each line says whose it is.
    rank = f"[rank {process_rank()}] " if process_count() > 1 else ""
    handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {rank}%(name)s: %(message)s"))
    for name in LOGGERS_IN_RUN_LOG:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)


def train_claimed_run(run_id: int, attempt: int) -> str | None:
    """Train attempt `attempt` of a run its supervisor claimed. Returns the final status, or None when the run is
    no longer at that attempt (a stale training process: it trains nothing)."""
    from tunelab.training.engine import run_training

    if not is_main_process():
        return _train_beside_rank_zero(run_id, attempt)
    settings = get_settings()
    with session_scope() as session:
        if not lifecycle.is_current_attempt(session, run_id, attempt):
            log.info("run %s is not at attempt %s any more; nothing to do", run_id, attempt)
            return None
        run = session.get_one(Run, run_id)
        config, worker, prior_wall_time = training_config(run), run.worker, run.wall_time_s or 0.0
        checkpoint_step = run.checkpoint_step
    try:
        model_path = worker_model_path(settings, config["model"], config["model_path"])
    except FileNotFoundError as exc:  # not this worker's to train: it says so rather than fail attempt after attempt
        log.error("run %s: %s", run_id, exc)
        with session_scope() as session:
            lifecycle.finish_run(session, run_id, RunStatus.failed, str(exc), attempt=attempt)
        return RunStatus.failed.value
    identity = model_identity(model_path)
    with session_scope() as session:
        lifecycle.record_start(session, run_id, package_versions(), identity)

    output_dir = artifacts.run_dir(settings, run_id)
    sink = SqlRunSink(run_id, settings.metrics_flush_interval_s, output_dir, prior_wall_time if attempt > 1 else 0.0)
    status, reason = RunStatus.failed, None
    watch = CancelWatch(run_id, sink, settings)
    # The supervisor's word that its worker is shutting down (supervisor._supervise): the trainer stops at the next
    # step, saving a checkpoint, as for a cancel.
    signal.signal(signal.SIGTERM, lambda *_: sink.preempt_event.set())
    try:
        resuming = f", resuming from step {checkpoint_step}" if attempt > 1 and checkpoint_step else ""
        log.info("run %s claimed by %s: %s %s on %s (attempt %d, training process %d%s)", run_id, worker,
                 config["objective"], config["method"], config["model"], attempt, os.getpid(), resuming)
        with watch:
            job = _training_job(settings, run_id, config, attempt, model_path, str(identity.get("files_digest", "")))
            result = run_training(job, sink)
        adapter_dir = output_dir / "adapter"
        if (adapter_dir / "adapter_config.json").is_file():
            revision = identity.get("hub_revision")
            name_base_by_id(adapter_dir, config["model"], str(revision) if revision else None)
        if result.canceled and sink.preempted:
            status = RunStatus.queued
        elif result.canceled:
            status = RunStatus.canceled
            reason = f"canceled by user at step {sink.current_step}"
            if watch.cancel_seen_at_step is not None:
                reason += f" (cancel seen at step {watch.cancel_seen_at_step})"
        else:
            status = RunStatus.succeeded
    except Exception as exc:  # noqa: BLE001  (any failure of the run becomes its status reason)
        reason = f"{type(exc).__name__}: {exc}"
        log.error("run %s failed\n%s", run_id, traceback.format_exc())
        if is_disk_full(exc, output_dir):
            reason = disk_full_reason(output_dir, remove_incomplete_checkpoints(output_dir))
            log.error("run %s: %s", run_id, reason)
    finally:
        try:
            sink.flush()
        except Exception:  # noqa: BLE001
            log.warning("final metrics flush failed for run %s", run_id, exc_info=True)
        try:
            run_files.publish(settings, run_id, output_dir)
        except AppError as exc:  # what the store did not take is not the run's: it fails with why
            log.error("run %s: %s", run_id, exc.message)
            status, reason = RunStatus.failed, f"its files could not be stored: {exc.message}"
        with session_scope() as session:
            artifacts.index_run_artifacts(session, settings, run_id)
            if status == RunStatus.queued:
                lifecycle.requeue_preempted(session, run_id, attempt, f"its worker {worker} was shutting down")
            else:
                lifecycle.finish_run(session, run_id, status, reason, attempt=attempt)
    return status.value


def _train_beside_rank_zero(run_id: int, attempt: int) -> str | None:
    """A rank other than 0 of a multi-process run: it trains the same job, reporting nothing (rank 0 records the
    start, metrics, checkpoints and the end for all). An error propagates: the process exits non-zero, torchrun stops
    the other ranks, and the supervisor settles it as a lost training process."""
    from tunelab.training.engine import run_training

    settings = get_settings()
    with session_scope() as session:
        if not lifecycle.is_current_attempt(session, run_id, attempt):
            return None
        config = training_config(session.get_one(Run, run_id))
    model_path = worker_model_path(settings, config["model"], config["model_path"])
    result = run_training(_training_job(settings, run_id, config, attempt, model_path), SilentSink())
    return (RunStatus.canceled if result.canceled else RunStatus.succeeded).value


def _training_job(settings: Settings, run_id: int, config: RunConfig, attempt: int, model_path: Path,
                  model_digest: str = "") -> TrainingJob:
    start_from = config.get("start_from", [])
    return TrainingJob(
        objective=config["objective"], method=config["method"], model=str(model_path),
        dataset_path=_dataset_file(settings, run_id), dataset_format=config["dataset"]["format"],
        params=config["params"], output_dir=artifacts.run_dir(settings, run_id), resume=attempt > 1,
        split_seed=config["dataset"].get("split_seed"), system_metrics_interval_s=settings.system_metrics_interval_s,
        model_name=config["model"], dataset_name=config["dataset"]["name"],
        baseline_cache_dir=settings.data_dir / "baselines", model_digest=model_digest,
        start_from=_starting_weights(settings, start_from),
        # The tokenizer of the run it starts from (its chat template): the last one's, which every one before passed on.
        start_tokenizer_dir=run_files.run_folder(settings, start_from[-1]["run_id"], "tokenizer") if start_from else None,
        reward_model=_scoring_model(settings, config["reward_model"]) if "reward_model" in config else None,
    )


def _starting_weights(settings: Settings, weights: list[dict[str, Any]]) -> tuple[StartingWeights, ...]:
    return tuple(StartingWeights(kind=w["kind"], path=run_files.run_folder(settings, w["run_id"], w["kind"]),
                                 source=f"run {w['run_id']} · {w['name']}") for w in weights)


def _scoring_model(settings: Settings, reward: dict[str, Any]) -> ScoringModel:
    """The reward run's model as this worker loads it: its base (from that run's config) with its weights applied."""
    with session_scope() as session:
        run = session.get(Run, reward["run_id"])
        if run is None:
            raise FileNotFoundError(f"the reward run {reward['run_id']} ({reward['name']}) was deleted")
        reward_config = training_config(run)
    base = worker_model_path(settings, reward_config["model"], reward_config["model_path"])
    return ScoringModel(base=str(base), weights=_starting_weights(settings, reward["weights"]),
                        tokenizer_dir=run_files.run_folder(settings, reward["run_id"], "tokenizer"),
                        source=f"run {reward['run_id']} · {reward['name']}")


def _dataset_file(settings: Settings, run_id: int) -> Path:
    with session_scope() as session:
        run = session.get(Run, run_id)
        dataset = session.get(Dataset, run.dataset_id) if run is not None and run.dataset_id else None
        if dataset is None:
            raise FileNotFoundError(f"the dataset of run {run_id} was deleted")
        return dataset_file(settings, dataset)
