"""The ETA of a running run counts step time only: from its attempt's first logged training loss, not from its start
(which includes loading the model)."""

import itertools
from datetime import timedelta

from tunelab.db.base import utcnow
from tunelab.db.models.run import Run, RunStatus
from tunelab.db.session import session_scope

API = "/api/v1"
TOTAL_STEPS = 101
LOADING = timedelta(hours=1)  # a model that took an hour to load before its first step
SECONDS_PER_STEP = 2.0
_names = itertools.count()


def _running_run(current_step: int, start_step: int = 0) -> tuple[int, float]:
    """A run an hour past its start, at `current_step`; returns its id and the time of its latest progress."""
    now = utcnow()
    with session_scope() as session:
        run = Run(project_id=1, name=f"eta-{next(_names)}", objective="sft", method="lora", model="x", config={},
                  seed=0, queue="cpu", external=True, status=RunStatus.running, started_at=now - LOADING,
                  start_step=start_step, current_step=current_step, total_steps=TOTAL_STEPS, progress_at=now)
        session.add(run)
        session.flush()
        return run.id, now.timestamp()


def _log_losses(client, run_id: int, steps: range, last_at: float) -> None:
    points = [{"key": "train/loss", "step": step, "value": 1.0, "wall_time": last_at - (steps[-1] - step) * SECONDS_PER_STEP}
              for step in steps]
    response = client.post(f"{API}/runs/{run_id}/metrics", json={"points": points})
    assert response.status_code == 200, response.text


def _eta(client, run_id: int) -> float | None:
    return client.get(f"{API}/runs/{run_id}").json()["progress"]["eta_seconds"]


def test_eta_is_the_step_rate_after_the_first_logged_step_times_the_steps_left(client):
    run_id, now = _running_run(current_step=11)
    _log_losses(client, run_id, range(1, 12), now)
    assert abs(_eta(client, run_id) - SECONDS_PER_STEP * (TOTAL_STEPS - 11)) < 1.0


def test_no_eta_before_a_second_logged_step(client):
    run_id, now = _running_run(current_step=1)
    _log_losses(client, run_id, range(1, 2), now)
    assert _eta(client, run_id) is None


def test_a_resumed_run_counts_only_the_steps_of_its_attempt(client):
    run_id, now = _running_run(current_step=61, start_step=50)
    _log_losses(client, run_id, range(1, 51), now - 3 * 3600)  # the first attempt, three hours earlier
    _log_losses(client, run_id, range(51, 62), now)
    assert abs(_eta(client, run_id) - SECONDS_PER_STEP * (TOTAL_STEPS - 61)) < 1.0
