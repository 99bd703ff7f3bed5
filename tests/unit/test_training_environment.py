"""A training process's environment fixes glibc's mmap threshold, so that freed activations go back to the system and
the process's resident peak follows what the run holds (scripts/bench_estimate.py measures it); an operator's own
setting wins."""

import sys

from tunelab.services import supervisor


def _threshold_seen_by_a_training_process(tmp_path) -> str:
    output = tmp_path / "out.txt"
    with output.open("wb") as sink:
        process = supervisor._start_training_process(
            [sys.executable, "-c", "import os; print(os.environ.get('MALLOC_MMAP_THRESHOLD_'))"], sink)
        assert process.wait(timeout=60) == 0
    return output.read_text().strip()


def test_a_training_process_gets_a_fixed_mmap_threshold(tmp_path, monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert _threshold_seen_by_a_training_process(tmp_path) == str(128 * 1024)


def test_the_operators_threshold_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "4096")
    assert _threshold_seen_by_a_training_process(tmp_path) == "4096"
