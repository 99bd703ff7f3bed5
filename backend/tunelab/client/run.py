"""`tunelab.init()` and the Run it returns: log a run trained anywhere (a notebook, a cluster script) to Tunelab.

    run = tunelab.init(project="llama-sft", name="lr 2e-4", config={"learning_rate": 2e-4})
    for step in range(steps):
        run.log({"train/loss": loss}, step=step)
    run.finish()                      # or run.finish(failed="CUDA out of memory"); or `with tunelab.init(...) as run:`

What users of W&B and MLflow expect, and what this does:
- `init` needs the server: it retries an unreachable server for `TUNELAB_INIT_TIMEOUT_S` (default 30 s), then raises
  `ServerUnreachable` (as `mlflow.start_run` does); a refused token or project raises `TunelabError` at once. The run
  is created under an Idempotency-Key, and sent again with it when the answer does not come back in time
  (`TUNELAB_READ_TIMEOUT_S`), so a slow server never gets a run twice; after the last try it raises `ServerTimeout`.
- After `init`, the server may go away: `log()` only queues (never blocks, never raises); a background thread sends
  batches at most a second apart and spools to a local JSONL file while the server is unreachable
  (TUNELAB_SPOOL_DIR, default `spool/` beside the config file), delivering it when the server answers again.
- `finish()` sends what is left (trying for `TUNELAB_FINISH_TIMEOUT_S`, default 60 s) and ends the run. A run not
  finished by the script ends at interpreter exit, as in W&B: `failed` with the exception after an uncaught one,
  else `succeeded`. Points still spooled then stay on disk; `tunelab.init(run_id=…)` delivers them later.
"""

import atexit
import logging
import math
import os
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tunelab.client.config import ClientConfig, config_path, load_client_config
from tunelab.client.http import ApiClient, NoAnswer, ServerUnreachable, TunelabError
from tunelab.client.params import bounded_params
from tunelab.client.sender import PointSender

log = logging.getLogger("tunelab.client")

MAX_KEY_LENGTH = 200  # the API's


def _seconds_from_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def spool_dir() -> Path:
    if explicit := os.environ.get("TUNELAB_SPOOL_DIR"):
        return Path(explicit)
    return config_path().parent / "spool"


def spool_path_for(url: str, run_id: int) -> Path:
    """One file per server and run, so a later process of the same run finds it."""
    server = re.sub(r"[^A-Za-z0-9]+", "_", url.split("://", 1)[-1]).strip("_")
    return spool_dir() / f"{server}-run-{run_id}.jsonl"


def _jsonable(value: Any) -> Any:
    """A config as JSON: what JSON cannot hold (a dtype, a path, an enum) becomes its text."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class Run:
    """One external run on the server; log points to it, then finish it."""

    def __init__(self, api: ApiClient, run: dict[str, Any], flush_interval_s: float = 1.0,
                 batch_points: int = 1_000) -> None:
        self.api = api
        self.id: int = run["id"]
        self.name: str = run["name"]
        self.project_id: int = run["project_id"]
        self.status: str = run["status"]
        self.url = f"{api.config.url}/runs/{self.id}"
        self._next_step = 0
        self._closed = False  # finish() was called: later points are ignored
        self._warned: set[str] = set()
        self._finish_lock = threading.Lock()
        self._sender = PointSender(api, self.id, spool_path_for(api.config.url, self.id), flush_interval_s,
                                   batch_points)
        _finish_at_exit_unless_finished(self)

    @property
    def finished(self) -> bool:
        return self._closed or self.status in ("succeeded", "failed", "canceled")

    @property
    def spool_path(self) -> Path:
        return self._sender.spool_path

    def log(self, values: Mapping[str, Any], step: int | None = None) -> None:
        """Queue points of one step; `step` defaults to one more than the last. Never blocks, never raises on
        a value it cannot send (a warning names it once)."""
        if self.finished:
            self._warn_once("finished", f"tunelab: run {self.id} is {self.status}; log() after finish() is ignored")
            return
        if step is None:
            step = self._next_step
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            self._warn_once(f"step:{step!r}", f"tunelab: step must be a whole number >= 0, not {step!r}; skipped")
            return
        self._next_step = step + 1
        wall_time = time.time()
        for key, value in values.items():
            if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_LENGTH:
                self._warn_once(f"key:{key!r}", f"tunelab: a metric key is 1-{MAX_KEY_LENGTH} characters of text; "
                                f"{key!r} is skipped")
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                self._warn_once(f"value:{key}", f"tunelab: {key}={value!r} is not a number; skipped")
                continue
            self._sender.put((key, step, number, wall_time))

    def finish(self, failed: str | None = None, timeout_s: float | None = None) -> None:
        """Send what is left, then end the run `succeeded`, or `failed` with the reason given. Never raises: what
        went wrong is logged (a run canceled from the dashboard meanwhile stays canceled)."""
        with self._finish_lock:
            if self.finished:
                return
            timeout_s = _seconds_from_env("TUNELAB_FINISH_TIMEOUT_S", 60.0) if timeout_s is None else timeout_s
            deadline = time.monotonic() + timeout_s
            delivered = self._sender.close(timeout_s)
            if not delivered:
                log.warning("tunelab: the server did not take every point of run %d; they stay in %s until "
                            "tunelab.init(run_id=%d) runs again", self.id, self.spool_path, self.id)
            body = {"status": "failed" if failed is not None else "succeeded"}
            if failed is not None:
                body["reason"] = failed[:2000]
            self._closed = True
            _unfinished.discard(self)
            self._send_finish(body, deadline)

    def _send_finish(self, body: dict[str, str], deadline: float) -> None:
        backoff = 0.5
        while True:
            try:
                self.status = self.api.post(f"/runs/{self.id}/finish", json=body)["status"]
                return
            except NoAnswer as error:
                if time.monotonic() + backoff > deadline:
                    log.warning("tunelab: could not finish run %d (%s); it stays running on the server", self.id,
                                error.message)
                    return
            except TunelabError as error:
                log.warning("tunelab: the server did not finish run %d: %s", self.id, error)
                if error.code == "RUN_FINISHED" and isinstance(error.details, dict):
                    self.status = str(error.details.get("status", self.status))
                return
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning(message)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.finish(failed=None if error is None else exception_reason(error))

    def __repr__(self) -> str:
        return f"<tunelab Run {self.id} {self.name!r} {self.status} {self.url}>"


def exception_reason(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(error), error)).strip() or type(error).__name__


def _resolve_project(api: ApiClient, project: int | str | None) -> int | None:
    """A project id as is; a name is looked up among yours and created (you become its owner) when missing."""
    if project is None or isinstance(project, int):
        return project
    if project.isdigit():
        return int(project)
    for known in api.get("/projects")["data"]:
        if known["name"] == project:
            return int(known["id"])
    return int(api.post("/projects", json={"name": project})["id"])


def _with_retries(call: Any, timeout_s: float) -> Any:
    """Retry a call whose connection was refused (nothing was sent, so nothing is done twice) until timeout_s."""
    deadline = time.monotonic() + timeout_s
    backoff = 0.25
    while True:
        try:
            return call()
        except ServerUnreachable as error:
            refused = isinstance(error.__cause__, httpx.ConnectError)
            if not refused or time.monotonic() + backoff > deadline:
                raise
        time.sleep(backoff)
        backoff = min(backoff * 2, 4.0)


def init(project: int | str | None = None, name: str | None = None, config: Mapping[str, Any] | None = None,
         url: str | None = None, token: str | None = None, *, model: str | None = None, method: str | None = None,
         objective: str | None = None, run_id: int | None = None, flush_interval_s: float = 1.0) -> Run:
    """Create an external run (or, with `run_id`, continue one still running and deliver its spooled points).

    project: an id or a name (created when you have none of that name); default TUNELAB_PROJECT, else the server's
    default for you. config: the run's parameters, shown and compared on the dashboard. url/token: default
    TUNELAB_URL/TUNELAB_TOKEN, then the file `tunelab login` writes.
    """
    resolved: ClientConfig = load_client_config(url, token)
    api = ApiClient(resolved)
    timeout_s = _seconds_from_env("TUNELAB_INIT_TIMEOUT_S", 30.0)
    try:
        if run_id is not None:
            found = _with_retries(lambda: api.get(f"/runs/{run_id}"), timeout_s)
            if not found["external"] or found["status"] != "running":
                raise TunelabError("RUN_NOT_LOGGABLE", f"run {run_id} is {found['status']} and "
                                   f"{'external' if found['external'] else 'trained by Tunelab'}: only a running "
                                   "external run takes points", {"run_id": run_id}, 409)
            return Run(api, found, flush_interval_s)
        project = project if project is not None else os.environ.get("TUNELAB_PROJECT")
        project_id = _with_retries(lambda: _resolve_project(api, project), timeout_s)
        body: dict[str, Any] = {"external": True, "method": method or "custom", "model": model or "unknown",
                                "params": bounded_params(_jsonable(dict(config or {})))}
        if name:
            body["name"] = name
        if objective:
            body["objective"] = objective
        if project_id is not None:
            body["project_id"] = project_id
        idempotency_key = str(uuid.uuid4())  # one for every try: the server creates the run once
        created = _with_retries(lambda: api.launch("/runs", body, idempotency_key), timeout_s)
    except BaseException:
        api.close()
        raise
    run = Run(api, created, flush_interval_s)
    log.info("tunelab: logging to %s", run.url)
    return run


# Runs the script did not finish end with the interpreter: failed after an uncaught exception, else succeeded. The
# hooks go in with the first run, so importing the SDK changes nothing.
_unfinished: set[Run] = set()
_uncaught: list[BaseException] = []
_hooks_installed = False


def _finish_at_exit_unless_finished(run: Run) -> None:
    global _hooks_installed
    _unfinished.add(run)
    if _hooks_installed:
        return
    _hooks_installed = True
    previous_excepthook = sys.excepthook

    def record_uncaught(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        _uncaught.append(error)
        previous_excepthook(kind, error, trace)

    sys.excepthook = record_uncaught
    atexit.register(_finish_unfinished)


def _finish_unfinished() -> None:
    reason = exception_reason(_uncaught[-1]) if _uncaught else None
    for run in list(_unfinished):
        run.finish(failed=reason)
