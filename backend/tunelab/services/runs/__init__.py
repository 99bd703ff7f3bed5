"""Runs and the queue: launching, editing and filtering runs, the exact queue and its workers, a run's lifecycle and
files, external runs, exports, estimates, retry-safe launches, and the reaper of runs whose worker died."""
