"""Migration 0011 packs the per-point metric history into metric_chunk, a row per flush and key, and its downgrade
unpacks it: every point stored before either one is there after it, once, in its flush, and the rollup cells are
rebuilt at the width each side reads."""

import math
import sys
from array import array

import sqlalchemy as sa
from sqlalchemy.orm import Session

from tunelab.db.migrate import downgrade, upgrade
from tunelab.db.models import Run

INF = float("inf")
# (seq, key, step, value, wall_time). Seq 1 holds two keys; seq 3 holds a step of loss lower than seq 2's, as a
# late or retried point does; seq 4 holds one key's many points, more than the migration reads in one batch.
POINTS = [(1, "loss", 0, 0.5, 100.0), (1, "loss", 1, 0.4, 100.5), (1, "lr", 0, 1e-4, 100.25),
          (2, "loss", 5, 0.3, 101.0), (2, "lr", 5, INF, 101.0),
          (3, "loss", 2, 0.2, 102.0), (3, "loss", 7, -INF, 102.5), (3, "lr", 3, -INF, 102.0),
          *((4, "big", step, step / 7, 200.0 + step) for step in range(12_345))]
OTHER_RUN_POINTS = [(1, "loss", 0, 9.0, 50.0), (2, "loss", 1, 8.0, 51.0)]


def _same(value: float) -> object:
    """A value as equality can compare it: NaN is not equal to itself."""
    return "nan" if math.isnan(value) else value


def _point_rows(points, run_id):
    return sorted((run_id, seq, key, step, _same(value), wall_time) for seq, key, step, value, wall_time in points)


def _unpack(typecode: str, data: bytes) -> list:
    unpacked = array(typecode)
    unpacked.frombytes(data)
    if sys.byteorder == "big":
        unpacked.byteswap()
    return unpacked.tolist()


def _rollups(conn: sa.Connection) -> list[tuple]:
    rows = conn.execute(sa.text("SELECT run_id, key, cell, last_step, last_value, last_wall_time, min_value, "
                                "max_value, count FROM metric_rollup")).all()
    return sorted((*row[:4], _same(row[4]), row[5], _same(row[6]), _same(row[7]), row[8]) for row in rows)


def _expected_rollups(point_rows: list[tuple], width: int) -> list[tuple]:
    """Cells of `width` steps as ingest keeps them: the last point, the min skipping NaN, the max where NaN wins."""
    cells: dict[tuple, list[tuple]] = {}
    for run, _, key, step, value, wall_time in point_rows:
        cells.setdefault((run, key, step // width), []).append((step, value, wall_time))
    rollups = []
    for (run, key, cell), members in cells.items():
        last_step, last_value, last_wall_time = max(members)
        numbers = [value for _, value, _ in members if value != "nan"]
        high = "nan" if len(numbers) < len(members) else max(numbers)
        rollups.append((run, key, cell, last_step, last_value, last_wall_time, min(numbers), high, len(members)))
    return sorted(rollups)


def test_points_stored_before_the_migration_are_chunked_and_unchunked(migration_db_url):
    downgrade(migration_db_url)
    upgrade(migration_db_url, "0009")
    engine = sa.create_engine(migration_db_url)
    points = list(POINTS)
    if engine.dialect.name == "postgresql":  # SQLite stores a NaN as NULL
        points.append((5, "lr", 9, math.nan, 103.0))
    try:
        with Session(engine, expire_on_commit=False) as session, session.begin():  # run is as it was at 0009
            # A Core insert names only the columns given or defaulted: run's later columns (base_run_id…) are not
            # in the table yet.
            run_ids = [session.scalar(sa.insert(Run.__table__).values(
                project_id=1, name=name, objective="sft", method="lora", model="x", config={}, seed=0, queue="cpu",
                external=True, metric_seq=5).returning(Run.__table__.c.id)) for name in ("old", "other")]
            for run_id, run_points in zip(run_ids, (points, OTHER_RUN_POINTS)):
                session.execute(sa.text("INSERT INTO metric (run_id, key, step, value, wall_time, seq) "
                                        "VALUES (:run, :key, :step, :value, :wall_time, :seq)"),
                                [{"run": run_id, "key": key, "step": step, "value": value, "wall_time": wall_time,
                                  "seq": seq} for seq, key, step, value, wall_time in run_points])
        run_id, other_id = run_ids
        expected = sorted(_point_rows(points, run_id) + _point_rows(OTHER_RUN_POINTS, other_id))
        expected_flushes = {}
        for run, seq, key, step, _, _ in expected:
            first, last, count = expected_flushes.get((run, seq, key), (step, step, 0))
            expected_flushes[run, seq, key] = (min(first, step), max(last, step), count + 1)

        upgrade(migration_db_url)
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            chunks = conn.execute(sa.text("SELECT run_id, seq, key, first_step, last_step, count, step_bytes, "
                                          "value_bytes, wall_time_bytes FROM metric_chunk")).all()
            rollups = _rollups(conn)
        assert "metric" not in tables and "metric_flush" not in tables
        unpacked = []
        for run, seq, key, first_step, last_step, count, step_bytes, value_bytes, wall_time_bytes in chunks:
            steps = _unpack("q", step_bytes)
            values = _unpack("d", value_bytes)
            wall_times = _unpack("d", wall_time_bytes)
            assert steps == sorted(steps) and len(set(steps)) == len(steps)
            assert len(steps) == len(values) == len(wall_times) == count
            assert (first_step, last_step) == (steps[0], steps[-1])
            unpacked += [(run, seq, key, step, _same(value), wall_time)
                         for step, value, wall_time in zip(steps, values, wall_times)]
        assert sorted((run, seq, key) for run, seq, key, *_ in chunks) == sorted(expected_flushes)
        assert sorted(unpacked) == expected  # every point, once, in its flush
        assert rollups == _expected_rollups(expected, 64)  # the rollup cells rebuilt 64 steps wide
        if engine.dialect.name == "postgresql":
            with engine.connect() as conn:
                lz4 = conn.scalar(sa.text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                                          "WHERE name = 'default_toast_compression'"))
                methods = conn.scalars(sa.text("SELECT attcompression FROM pg_attribute WHERE attrelid = "
                                               "'metric_chunk'::regclass AND attname LIKE '%\\_bytes'")).all()
            assert methods == ["l"] * 3 or not lz4, methods  # lz4 where the server has it

        downgrade(migration_db_url, "0010")
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            rows = conn.execute(sa.text("SELECT run_id, seq, key, step, value, wall_time FROM metric")).all()
            flushes = conn.execute(sa.text("SELECT run_id, seq, key, first_step, last_step, count "
                                           "FROM metric_flush")).all()
            rollups = _rollups(conn)
        assert "metric_chunk" not in tables
        assert sorted((run, seq, key, step, _same(value), wall_time)
                      for run, seq, key, step, value, wall_time in rows) == expected
        assert {(run, seq, key): (first, last, count) for run, seq, key, first, last, count in flushes} \
            == expected_flushes
        assert len(flushes) == len(expected_flushes)
        assert rollups == _expected_rollups(expected, 16)
    finally:
        engine.dispose()
        downgrade(migration_db_url)
