"""A running run's phase, as the worker's sink reports it, reaches GET /runs/{id} with the step it was reached at."""

from tunelab.db.base import utcnow
from tunelab.db.models.run import Run, RunStatus
from tunelab.db.session import session_scope
from tunelab.worker.execution import SqlRunSink

API = "/api/v1"


def test_a_phase_lands_with_the_steps_done_before_it(client, tmp_path):
    with session_scope() as session:
        run = Run(project_id=1, name="phase", objective="sft", method="lora", model="x", config={}, seed=0,
                  queue="cpu", external=True, status=RunStatus.running, started_at=utcnow(), total_steps=10)
        session.add(run)
        session.flush()
        run_id = run.id
    sink = SqlRunSink(run_id, flush_interval_s=3600, output_dir=tmp_path)  # nothing flushes on its own
    sink.progress(5, 10)
    sink.phase("evaluating")

    progress = client.get(f"{API}/runs/{run_id}").json()["progress"]
    assert progress["phase"] == "evaluating" and progress["current_step"] == 5
