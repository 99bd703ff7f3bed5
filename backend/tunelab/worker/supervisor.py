"""The worker's side of a run: claim it, train it in a training process of its own, keep its heartbeat, kill the
process on a force stop, and settle what a dead training process leaves behind.

The supervisor stays light (no torch): a duplicate or stale delivery is dropped in milliseconds, and the pool's
process that runs it stays warm for the next run, while each run still gets a fresh process (a clean CUDA context,
a true peak-memory figure). That process is started ahead of its run (`warm_training_process`): it loads torch,
transformers and TRL, ~10 s of a CPU core, while the worker waits for work or trains the run before, and is handed
its run once one is claimed."""

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from tunelab.core.errors import AppError
from tunelab.core.processes import die_with_parent
from tunelab.core.redis import environ_with_redis, redis_url
from tunelab.core.settings import Settings, get_settings
from tunelab.db.models import Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.services.live.events import wait_for_notice
from tunelab.services.runs import artifacts, lifecycle, pipelines, queue, run_files
from tunelab.services.runs.queue import Broker

log = logging.getLogger(__name__)
WAIT_SLICE_S = 0.25


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"the training process was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"the training process was killed by signal {-returncode}"
    return f"the training process exited with code {returncode}"


def execute_run(run_id: int, worker: str | None = None, broker: Broker | None = None) -> str | None:
    """Claim the run and see it trained to its end. Returns its status afterwards, or None when the run was not
    ours to train (a duplicate or stale delivery, or canceled while queued): then no training process starts."""
    settings = get_settings()
    began = time.perf_counter()
    with session_scope() as session:
        claim = lifecycle.claim_run(session, run_id, worker or worker_name())
        num_processes = _num_processes(session.get(Run, run_id)) if claim is not None else 1
    if claim is None:
        log.info("run %s is not queued (duplicate delivery, or canceled): dropped in %.1f ms", run_id,
                 (time.perf_counter() - began) * 1000)
        return None
    folder = artifacts.run_dir(settings, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    if claim.attempt > 1:
        _pull_earlier_attempts(settings, run_id, folder)
    process = _hand_to_warm_process(run_id, claim.attempt) if num_processes == 1 else None
    if process is not None:
        log.info("run %s attempt %d: handed to warm training process %d", run_id, claim.attempt, process.pid)
    else:
        with (folder / artifacts.RUN_LOG_NAME).open("ab") as run_log:
            process = _start_training_process(training_command(run_id, claim.attempt, num_processes), run_log)
        log.info("run %s attempt %d: training process %d started%s", run_id, claim.attempt, process.pid,
                 f" (torchrun, {num_processes} processes)" if num_processes > 1 else "")
    # The next run's process loads while this one trains: queued runs then start one after another without waiting
    # for imports (on a machine of few cores it shares them with this run for those seconds).
    start_warm_process(settings)
    forced = _supervise(run_id, process, settings, folder)
    return _settle(settings, run_id, claim.attempt, process.returncode, forced, broker)


def _start_training_process(command: list[str], output: IO[bytes] | None, stdin: int = subprocess.DEVNULL,
                            ) -> subprocess.Popen:
    return subprocess.Popen(
        command, stdin=stdin, stdout=output, stderr=subprocess.STDOUT if output is not None else None,
        env=environ_with_redis(redis_url()),
        # Its own process group, so a force stop kills whatever it started too; and it dies with this process.
        # torchrun starts each rank in a session of its own, out of the group's reach: a rank dies with torchrun
        # instead (cli.cmd_train).
        start_new_session=True, preexec_fn=die_with_parent,
    )


# This pool process's warm training process: `tunelab train --warm`, waiting on its stdin for a run.
_warm: subprocess.Popen | None = None


def start_warm_process(settings: Settings | None = None) -> None:
    """Start the next run's training process now, unless one waits already (or the setting is off). Its output goes
    to the worker's own until it is handed a run (an import that fails shows in the worker's log); it dies with this
    process, and ends by itself when its stdin closes."""
    global _warm
    if not (settings or get_settings()).warm_training_process or (_warm is not None and _warm.poll() is None):
        return
    try:
        _warm = _start_training_process([sys.executable, "-m", "tunelab.cli", "train", "--warm"], None,
                                        stdin=subprocess.PIPE)
    except OSError:
        log.warning("could not start a warm training process; the next run starts its own", exc_info=True)
        _warm = None


def _hand_to_warm_process(run_id: int, attempt: int) -> subprocess.Popen | None:
    """The warm training process, told to train this attempt; None when there is none alive (then the caller starts
    one for the run, as it would without)."""
    global _warm
    process, _warm = _warm, None
    if process is None or process.stdin is None:
        return None
    if process.poll() is not None:
        log.warning("the warm training process %d had exited (code %s); starting one for run %s", process.pid,
                    process.returncode, run_id)
        return None
    try:
        process.stdin.write(f"{run_id} {attempt}\n".encode())
        process.stdin.close()
    except OSError:  # it died between the look and the write
        _kill_group(process)
        return None
    return process


def training_command(run_id: int, attempt: int, num_processes: int) -> list[str]:
    """`tunelab train RUN_ID --attempt N`; under torchrun for a multi-process run, which starts one rank per process
    on this host with a rendezvous of their own (--standalone: a free port, so runs of one host never meet). The
    process group's backend follows the device: gloo on CPU, nccl on CUDA (accelerate picks it)."""
    train = ["-m", "tunelab.cli", "train", str(run_id), "--attempt", str(attempt)]
    if num_processes <= 1:
        return [sys.executable, *train]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(num_processes),
            *train]


def _num_processes(run: Run | None) -> int:
    params = run.config.get("params", {}) if run is not None else {}
    return int(params.get("num_processes", 1))


def _pull_earlier_attempts(settings: Settings, run_id: int, folder: Path) -> None:
    """A resumed run: what its earlier attempts stored (on another host, maybe), its newest checkpoint first of all.
    Should the store not answer, the run resumes from what this host has, and its log says so."""
    try:
        run_files.pull(settings, run_id, folder)
    except (AppError, OSError) as exc:
        message = exc.message if isinstance(exc, AppError) else str(exc)
        log.warning("run %s: could not pull its earlier attempts' files: %s", run_id, message)
        with (folder / artifacts.RUN_LOG_NAME).open("a", encoding="utf-8") as run_log:
            run_log.write(f"could not pull the earlier attempts' files from the artifact store: {message}\n")


def _sync_live_files(settings: Settings, run_id: int, folder: Path) -> None:
    try:
        run_files.publish(settings, run_id, folder, live_only=True)
    except (AppError, OSError):  # sent at the next sync, or at the end
        log.warning("run %s: could not upload its log and samples; retrying at the next sync", run_id, exc_info=True)


def _shutdown_marker(settings: Settings, worker_pid: int) -> Path:
    return settings.cache_dir / "shutting-down" / str(worker_pid)


def announce_shutdown(settings: Settings | None = None) -> None:
    """In the worker's main process, as its warm shutdown begins (SIGTERM): the pool processes' supervisors see it
    and have their runs stop at a checkpoint and go back to the queue, within the grace period."""
    marker = _shutdown_marker(settings or get_settings(), os.getpid())
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


def clear_shutdown(settings: Settings | None = None) -> None:
    """A worker starting: a marker left by an earlier process of the same pid is not its own."""
    _shutdown_marker(settings or get_settings(), os.getpid()).unlink(missing_ok=True)


def _supervise(run_id: int, process: subprocess.Popen, settings: Settings, folder: Path) -> bool:
    """Beat the heartbeat while the training process lives, and send its log and samples to the store; kill it when
    a force stop is asked for; ask it to stop at a checkpoint when the worker shuts down. Returns whether it was
    killed by a force stop."""
    force = threading.Event()
    done = threading.Event()
    listener = threading.Thread(target=wait_for_notice, daemon=True, name=f"force-stop-listener-{run_id}",
                                args=(run_id, frozenset({"force_stop"}), force.set, done, "the force-stop listener"))
    listener.start()
    next_beat = next_sync = time.monotonic()
    shutting_down = _shutdown_marker(settings, os.getppid())  # the worker's main process is this one's parent
    asked_to_stop = False
    try:
        while process.poll() is None:
            if not asked_to_stop and shutting_down.exists():
                asked_to_stop = True
                log.warning("run %s: the worker is shutting down; training process %d stops at a checkpoint and the "
                            "run goes back to the queue", run_id, process.pid)
                try:
                    process.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            if time.monotonic() >= next_sync:
                next_sync = time.monotonic() + settings.store_sync_interval_s
                _sync_live_files(settings, run_id, folder)
            if time.monotonic() >= next_beat:
                next_beat = time.monotonic() + settings.heartbeat_interval_s
                try:
                    with session_scope() as session:
                        if lifecycle.beat(session, run_id).force:
                            force.set()
                except Exception:  # noqa: BLE001  (a missed beat is survivable; the next one may succeed)
                    log.warning("heartbeat failed for run %s", run_id, exc_info=True)
            if force.is_set():
                log.warning("run %s: force stop; killing training process %d", run_id, process.pid)
                _kill_group(process)
                return True
            try:
                process.wait(timeout=WAIT_SLICE_S)
            except subprocess.TimeoutExpired:
                pass
        return False
    finally:
        done.set()


def _move_pipeline_on(settings: Settings, run_id: int, broker: Broker | None) -> None:
    """A pipeline's stage ended: queue the next stage (or cancel the rest). Should this fail, the reaper's sweep does
    it."""
    try:
        with session_scope() as session:
            launched = pipelines.advance_after_run(session, settings, run_id, broker)
        if launched is not None:
            log.info("run %s ended its pipeline stage; run %s, the next stage, is queued", run_id, launched.id)
    except Exception:  # noqa: BLE001
        log.warning("run %s: could not move its pipeline on; the reaper will", run_id, exc_info=True)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _publish_what_is_left(settings: Settings, run_id: int) -> None:
    folder = artifacts.run_dir(settings, run_id)
    try:
        run_files.publish(settings, run_id, folder)
    except (AppError, OSError):
        log.warning("run %s: could not store what its training process left", run_id, exc_info=True)


def _settle(settings: Settings, run_id: int, attempt: int, returncode: int, forced: bool,
            broker: Broker | None) -> str | None:
    """The training process has exited. If it did not record the run's end (it was killed, or crashed), record it
    here: a force stop ends `canceled`; anything else is a lost training process, resumed from its checkpoint (on any
    host: what it left here is sent to the store first)."""
    if forced or returncode != 0:
        _publish_what_is_left(settings, run_id)
    with session_scope() as session:
        if forced:
            run = session.get(Run, run_id)
            step = run.current_step if run is not None else 0
            lifecycle.finish_run(session, run_id, RunStatus.canceled,
                                 f"force-stopped at step {step}: the training process was killed", attempt=attempt)
            artifacts.index_run_artifacts(session, settings, run_id)
        elif lifecycle.is_current_attempt(session, run_id, attempt):
            why = describe_exit(returncode)
            log.warning("run %s: %s before it finished", run_id, why)
            lifecycle.training_lost(session, settings, run_id, why, attempt=attempt)
        run = session.get(Run, run_id)
        if run is None:  # it finished, and its user deleted it before this look
            return None
        status, run_queue = run.status, run.queue
    if status.finished:
        _move_pipeline_on(settings, run_id, broker)
    if status == RunStatus.queued and broker is not None:
        try:
            queue.dispatch_unsent(broker, run_queue)
        except Exception:  # noqa: BLE001  (the reconciler sends it once the broker answers)
            log.warning("could not send run %s again; the reconciler will", run_id, exc_info=True)
    return status.value
