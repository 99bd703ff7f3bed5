"""`tunelab runs list/show` name what a running run's process is doing where the step count stands still."""

from tunelab.commands.runs import _progress


def _run(step: int, total: int | None, phase: str | None) -> dict:
    return {"progress": {"current_step": step, "total_steps": total, "phase": phase}}


def test_the_phase_follows_the_steps_except_while_training():
    assert _progress(_run(0, 30, "loading_model")) == "0/30 loading model"
    assert _progress(_run(30, 30, "generating")) == "30/30 generating"
    assert _progress(_run(12, 30, "training")) == "12/30"
    assert _progress(_run(5, None, None)) == "5"
