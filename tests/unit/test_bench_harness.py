"""The benchmark's pure parts (scripts/bench_harness.py): CPU accounting of a process tree and ratio formatting.
MLflow itself is bench-only and not needed here."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_harness import CpuAccount, format_ratio, process_tree, ratio, table  # noqa: E402

# A parent that idles while its child burns CPU until told to stop (a line on stdin), like a server and its worker.
PARENT = textwrap.dedent("""
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c",
        "import sys, threading\\nstop = threading.Event()\\n"
        "threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()\\n"
        "print('burning', flush=True)\\nwhile not stop.is_set():\\n    sum(range(1000))"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    print(child.pid, child.stdout.readline().strip(), flush=True)
    sys.stdin.readline()
    child.stdin.write("stop\\n"); child.stdin.flush(); child.wait()
""")


class FakeProcess:
    def __init__(self, pid: int, cpu: float, created: float = 1.0) -> None:
        self.pid, self.cpu, self.created, self.gone = pid, cpu, created, False

    def create_time(self) -> float:
        return self.created

    def cpu_times(self):
        if self.gone:
            raise psutil.NoSuchProcess(self.pid)
        return SimpleNamespace(user=self.cpu * 0.75, system=self.cpu * 0.25)


def test_a_process_tree_counts_the_childrens_cpu_not_only_the_roots():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child_pid, state = parent.stdout.readline().split()
        assert state == "burning"
        tree, root_only = CpuAccount([process_tree(parent.pid)]), CpuAccount([lambda: [psutil.Process(parent.pid)]])
        tree.start(), root_only.start()
        child = psutil.Process(int(child_pid))
        before = sum(child.cpu_times()[:2])
        # Wait on the child's own CPU clock, not the wall clock: the machine may be busy.
        while sum(child.cpu_times()[:2]) - before < 0.3:
            psutil.Process(parent.pid).children()  # a cheap call between polls
        spent_by_tree, spent_by_root = tree.stop(), root_only.stop()
        assert spent_by_tree >= 0.3
        assert spent_by_root < 0.1
    finally:
        parent.stdin.write("stop\n")
        parent.stdin.flush()
        parent.wait(timeout=60)


def test_a_process_that_exits_keeps_its_last_seen_cpu_and_a_new_one_counts_from_zero():
    server, backend = FakeProcess(10, cpu=5.0), FakeProcess(11, cpu=2.0)
    present = [server, backend]
    account = CpuAccount([lambda: list(present)])
    account.start(background=False)
    server.cpu, backend.cpu = 5.5, 2.25
    account.sample()
    backend.gone = True  # the backend exits before the last sample: its 0.25 s stays counted
    newcomer = FakeProcess(12, cpu=0.5, created=time.time() + 5)  # started after start()
    present.append(newcomer)
    server.cpu = 6.0
    assert account.stop() == pytest.approx(1.0 + 0.25 + 0.5)


def test_a_reused_pid_is_another_process():
    old = FakeProcess(20, cpu=3.0, created=1.0)
    present = [old]
    account = CpuAccount([lambda: list(present)])
    account.start(background=False)
    present[:] = [FakeProcess(20, cpu=0.2, created=time.time() + 5)]  # same pid, started later: 0.2 s, not -2.8
    assert account.stop() == pytest.approx(0.2)


def test_a_process_that_a_sample_missed_counts_from_when_it_is_first_seen_not_from_zero():
    # The server's worker was left out of the start sample (its tree was walked while a child exited): counting it
    # from zero charged a 26 s workload with the 300 s of CPU it had spent on earlier workloads.
    worker = FakeProcess(30, cpu=300.0)
    present: list[FakeProcess] = []
    account = CpuAccount([lambda: list(present)])
    account.start(background=False)
    present.append(worker)
    account.sample()
    worker.cpu = 301.5
    assert account.stop() == pytest.approx(1.5)


def test_ratios_are_formatted_with_the_precision_they_deserve_and_refused_without_both_sides():
    assert format_ratio(ratio(130.5, 13.3)) == "9.8×"
    assert format_ratio(ratio(10.08, 8.06)) == "1.25×"
    assert format_ratio(ratio(153.6, 0)) == "n/a"
    assert format_ratio(ratio(None, 12.0)) == "n/a"
    assert table(["a", "bb"], [["x", "1"]]).splitlines() == ["| a | bb |", "|---|----|", "| x | 1  |"]
