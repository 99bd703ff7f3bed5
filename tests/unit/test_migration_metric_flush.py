"""Migration 0010 replaces the per-point replay index with metric_flush: flushes stored before it replay as before."""

import sqlalchemy as sa
from sqlalchemy.orm import Session

from tunelab.db.migrate import downgrade, upgrade
from tunelab.db.models import Run
from tunelab.services import metrics


def test_flushes_stored_before_the_migration_replay_in_order(migration_db_url):
    downgrade(migration_db_url)
    upgrade(migration_db_url, "0009")
    engine = sa.create_engine(migration_db_url)
    points = [(1, "loss", 0, 0.5), (1, "loss", 1, 0.4), (1, "lr", 0, 1e-4), (2, "loss", 2, 0.3), (3, "loss", 3, 0.2)]
    try:
        with Session(engine, expire_on_commit=False) as session, session.begin():  # run is as it was at 0009
            run = Run(project_id=1, name="old", objective="sft", method="lora", model="x", config={}, seed=0,
                      queue="cpu", external=True, metric_seq=3)
            session.add(run)
            session.flush()
            for seq, key, step, value in points:
                session.execute(sa.text("INSERT INTO metric (run_id, key, step, value, wall_time, seq) "
                                        "VALUES (:run, :key, :step, :value, 0, :seq)"),
                                {"run": run.id, "key": key, "step": step, "value": value, "seq": seq})
        run_id = run.id
        upgrade(migration_db_url, "0010")
        with Session(engine) as session:
            replay = [(p.seq, p.key, p.step, p.value) for p in metrics.points_after(session, run_id, 0, 100)]
            later = [(p.seq, p.step) for p in metrics.points_after(session, run_id, 1, 100)]
        assert replay == points
        assert later == [(2, 2), (3, 3)]
    finally:
        engine.dispose()
        downgrade(migration_db_url)
