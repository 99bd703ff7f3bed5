"""Fault injection against real processes (see tests/faults/outages.py, and private_stack in tests/conftest.py)."""

from tests.worker.conftest import sample_dataset  # noqa: F401  (a fixture the fault tests on the session stack use)
