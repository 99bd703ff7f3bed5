"""The parts of the MLflow-beside-Tunelab benchmark that do not depend on either system: server CPU accounting over
a changing set of processes, and the figures' formatting. Kept free of MLflow so tests/unit can check them."""

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import psutil

SAMPLE_INTERVAL_S = 0.25


class CpuProcess(Protocol):
    """What the accounting needs of a process (psutil.Process has it; tests pass fakes)."""

    pid: int

    def create_time(self) -> float: ...

    def cpu_times(self): ...


def process_tree(root_pid: int) -> Callable[[], list[psutil.Process]]:
    """The server process and all its descendants as they are now (workers, the reloader's child, job runners)."""
    root = psutil.Process(root_pid)

    def processes() -> list[psutil.Process]:
        # A child that exits while the tree is walked makes children() raise: walk again (an empty answer would
        # leave the whole tree out of a sample).
        for _ in range(5):
            try:
                return [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                if not root.is_running():
                    return []
        return [root]
    return processes


def postgres_backends(connection_url: str, database: str) -> Callable[[], list[psutil.Process]]:
    """The PostgreSQL backends connected to `database` (the server's pool, autovacuum on it), not the meter's own.
    `connection_url` is a libpq URL to any database of the same cluster; the server must run on this machine."""
    import psycopg

    meter = psycopg.connect(connection_url, autocommit=True)
    lock = threading.Lock()

    def processes() -> list[psutil.Process]:
        with lock:
            pids = [row[0] for row in meter.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (database,))]
        found = []
        for pid in pids:
            try:
                found.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        return found
    processes.close = meter.close  # type: ignore[attr-defined]
    return processes


class CpuAccount:
    """CPU seconds (user + system) that a changing set of processes spent since `start()`.

    Each process is known by (pid, create time) and keeps the last CPU time seen, so one that exits between two
    samples still counts up to its last sample; one created after `start()` counts from zero. One created before
    but first seen later (a sample missed it) counts from its first sighting: counting it from zero once charged a
    workload with a server's whole lifetime of CPU (316 s of CPU in a 26 s workload). A background
    thread samples every SAMPLE_INTERVAL_S while the account runs, since a PostgreSQL backend or a worker may come
    and go inside one workload. Reaped children's times in a parent's `children_*` are deliberately ignored: the
    children were already counted while alive."""

    def __init__(self, sources: Sequence[Callable[[], Iterable[CpuProcess]]]) -> None:
        self._sources = sources
        self._baseline: dict[tuple[int, float], float] = {}
        self._latest: dict[tuple[int, float], float] = {}
        self._lock = threading.Lock()
        self._started_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        seen = {}
        for source in self._sources:
            for process in source():
                try:
                    times = process.cpu_times()
                    seen[(process.pid, process.create_time())] = times.user + times.system
                except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                    continue
        with self._lock:
            for key, spent in seen.items():
                if key not in self._latest and key not in self._baseline and key[1] < self._started_at - 1.0:
                    self._baseline[key] = spent
            self._latest.update(seen)

    def start(self, background: bool = True) -> None:
        self._latest = {}
        self._baseline = {}
        self._started_at = time.time()
        self.sample()
        with self._lock:
            self._baseline = dict(self._latest)
        if background:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.sample()

    def stop(self) -> float:
        """The CPU seconds spent since start(), after a last sample."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self.sample()
        return self.seconds()

    def seconds(self) -> float:
        with self._lock:
            return sum(max(0.0, spent - self._baseline.get(key, 0.0)) for key, spent in self._latest.items())


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0 or numerator < 0:
        return None
    return numerator / denominator


def format_ratio(value: float | None) -> str:
    """9.8×, 1.25× below 2 (where a tenth hides a lot), n/a when either side is missing."""
    if value is None:
        return "n/a"
    return f"{value:.2f}×" if value < 2 else f"{value:.1f}×"


def format_rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def format_micros(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table (README-ready), columns padded for the terminal."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])
