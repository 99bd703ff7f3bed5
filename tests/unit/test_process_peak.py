"""A process's peak RSS is its own, not that of the process it was started from: Linux keeps the parent's peak in
ru_maxrss across fork + exec, and a training process started by a large worker reported the worker's size."""

import subprocess
import sys

from tunelab.training.memory import process_peak_rss_bytes

PARENT_EXTRA = 400 * 2**20


def test_a_child_started_by_a_large_parent_reports_its_own_peak():
    ballast = bytearray(PARENT_EXTRA)  # touched: resident in this process
    ballast[::4096] = b"x" * len(ballast[::4096])
    parent_peak = process_peak_rss_bytes()
    child = subprocess.run(
        [sys.executable, "-c", "from tunelab.training.memory import process_peak_rss_bytes; "
                               "print(process_peak_rss_bytes())"],
        capture_output=True, text=True, timeout=120, check=True)
    child_peak = int(child.stdout)
    assert parent_peak > PARENT_EXTRA
    assert child_peak < parent_peak - PARENT_EXTRA / 2, (child_peak, parent_peak)
    del ballast
