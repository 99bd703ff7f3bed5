"""Migrations 0013 (run.base_run_id) and 0014 (run.phase) keep everything that hangs off a run. On SQLite, adding a
foreign key rebuilds the run table (copy, drop, rename); with foreign keys on, the drop cascaded into every table
that references run and deleted all metrics, tags and artifacts of every run."""

import sqlalchemy as sa

from tunelab.db.migrate import downgrade, upgrade
from tunelab.db.models import Run
from tunelab.db.session import make_engine


def _counts(engine: sa.Engine, run_id: int) -> dict[str, int]:
    with engine.connect() as conn:
        return {table: conn.execute(sa.text(f"SELECT count(*) FROM {table} WHERE run_id = :run"),
                                    {"run": run_id}).scalar_one()
                for table in ("metric_summary", "run_tag")}


def test_upgrade_and_downgrade_keep_a_runs_metrics_and_tags(migration_db_url):
    # The session's PostgreSQL database may be at head already (other tests use it): start from 0012 either way.
    upgrade(migration_db_url, "0012")
    downgrade(migration_db_url, "0012")
    engine = make_engine(migration_db_url, poolclass=sa.pool.NullPool)  # Tunelab's own: SQLite foreign keys on
    try:
        with engine.begin() as conn:  # a Core insert names only the columns that exist at 0012
            run_id = conn.scalar(sa.insert(Run.__table__).values(
                project_id=1, name="before 0013", objective="sft", method="lora", model="x", config={}, seed=0,
                queue="cpu", external=True).returning(Run.__table__.c.id))
            conn.execute(sa.text("INSERT INTO metric_summary (run_id, key, last_step, last_value, min_value, "
                                 "max_value, count) VALUES (:run, 'eval/loss', 3, 1.5, 1.5, 2.0, 2)"), {"run": run_id})
            conn.execute(sa.text("INSERT INTO run_tag (run_id, tag) VALUES (:run, 'keep')"), {"run": run_id})
        kept = {"metric_summary": 1, "run_tag": 1}
        assert _counts(engine, run_id) == kept

        upgrade(migration_db_url)
        assert _counts(engine, run_id) == kept
        columns = {c["name"] for c in sa.inspect(engine).get_columns("run")}
        assert {"base_run_id", "phase"} <= columns

        downgrade(migration_db_url, "0012")
        assert _counts(engine, run_id) == kept
        upgrade(migration_db_url)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM run WHERE name = 'before 0013'"))
        engine.dispose()
