"""metric_chunk: the metric history as one row per flush and key (its points packed in three arrays) instead of a
row per point in metric and the replay index metric_flush; rollup cells of 64 steps instead of 16

Revision ID: 0011
Revises: 0010
"""

import sys
from array import array

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

# Rows read and written per round trip while the history is copied: bounded, so a large one never has to fit in
# memory (save a single flush and key, which is one chunk).
READ_BATCH = 10_000
WRITE_POINTS = 10_000

metric = sa.table('metric', sa.column('run_id', sa.Integer()), sa.column('key', sa.String(200)),
                  sa.column('step', sa.BigInteger()), sa.column('value', sa.Double()),
                  sa.column('wall_time', sa.Double()), sa.column('seq', sa.Integer()))
metric_flush = sa.table('metric_flush', sa.column('run_id', sa.Integer()), sa.column('seq', sa.Integer()),
                        sa.column('key', sa.String(200)), sa.column('first_step', sa.BigInteger()),
                        sa.column('last_step', sa.BigInteger()), sa.column('count', sa.Integer()))
metric_chunk = sa.table('metric_chunk', sa.column('run_id', sa.Integer()), sa.column('seq', sa.Integer()),
                        sa.column('key', sa.String(200)), sa.column('first_step', sa.BigInteger()),
                        sa.column('last_step', sa.BigInteger()), sa.column('count', sa.Integer()),
                        sa.column('step_bytes', sa.LargeBinary()), sa.column('value_bytes', sa.LargeBinary()),
                        sa.column('wall_time_bytes', sa.LargeBinary()))


def _pack(typecode: str, items: list) -> bytes:
    """Little-endian, as services/metrics.py reads it: 'q' int64 steps, 'd' float64 values and wall times."""
    packed = array(typecode, items)
    if sys.byteorder == 'big':
        packed.byteswap()
    return packed.tobytes()


def _unpack(typecode: str, data: bytes) -> array:
    unpacked = array(typecode)
    unpacked.frombytes(data)
    if sys.byteorder == 'big':
        unpacked.byteswap()
    return unpacked


def _stream(conn: sa.Connection, statement: sa.Executable):
    """The statement's rows in batches of READ_BATCH, through a server-side cursor where the backend has one."""
    # Options of this statement only: Connection.execution_options would set them for every later one too.
    result = conn.execute(statement, execution_options={'stream_results': True, 'yield_per': READ_BATCH})
    for batch in result.partitions():
        yield from batch


def _copy_points_to_chunks(conn: sa.Connection) -> None:
    rows = _stream(conn, sa.text("SELECT run_id, seq, key, step, value, wall_time FROM metric "
                                 "ORDER BY run_id, seq, key, step"))
    pending: list[dict] = []
    pending_points = 0

    def add_chunk(run_id: int, seq: int, key: str, steps: list, values: list, wall_times: list) -> None:
        nonlocal pending_points
        pending.append({'run_id': run_id, 'seq': seq, 'key': key, 'first_step': steps[0], 'last_step': steps[-1],
                        'count': len(steps), 'step_bytes': _pack('q', steps), 'value_bytes': _pack('d', values),
                        'wall_time_bytes': _pack('d', wall_times)})
        pending_points += len(steps)
        if pending_points >= WRITE_POINTS:
            flush()

    def flush() -> None:
        nonlocal pending_points
        if pending:
            conn.execute(metric_chunk.insert(), pending)
            pending.clear()
        pending_points = 0

    group = None
    steps: list[int] = []
    values: list[float] = []
    wall_times: list[float] = []
    for run_id, seq, key, step, value, wall_time in rows:
        if (run_id, seq, key) != group:
            if group is not None:
                add_chunk(*group, steps, values, wall_times)
            group, steps, values, wall_times = (run_id, seq, key), [], [], []
        steps.append(step)
        values.append(value)
        wall_times.append(wall_time)
    if group is not None:
        add_chunk(*group, steps, values, wall_times)
    flush()


def _copy_chunks_to_points(conn: sa.Connection) -> None:
    chunks = _stream(conn, sa.text("SELECT run_id, seq, key, step_bytes, value_bytes, wall_time_bytes "
                                   "FROM metric_chunk ORDER BY run_id, seq, key"))
    points: list[dict] = []
    flushes: list[dict] = []
    for run_id, seq, key, step_bytes, value_bytes, wall_time_bytes in chunks:
        steps = _unpack('q', step_bytes)
        values = _unpack('d', value_bytes)
        wall_times = _unpack('d', wall_time_bytes)
        if not len(steps) == len(values) == len(wall_times):
            raise ValueError(f"metric_chunk ({run_id}, {seq}, {key!r}): arrays of different lengths")
        if not steps:
            continue
        points.extend({'run_id': run_id, 'key': key, 'step': step, 'value': value, 'wall_time': wall_time,
                       'seq': seq} for step, value, wall_time in zip(steps, values, wall_times))
        flushes.append({'run_id': run_id, 'seq': seq, 'key': key, 'first_step': min(steps),
                        'last_step': max(steps), 'count': len(steps)})
        if len(points) >= WRITE_POINTS:
            conn.execute(metric.insert(), points)
            conn.execute(metric_flush.insert(), flushes)
            points.clear()
            flushes.clear()
    if points:
        conn.execute(metric.insert(), points)
        conn.execute(metric_flush.insert(), flushes)


# Steps per metric_rollup cell (services/metrics/downsample.ROLLUP_WIDTH) before and after: with points in chunks, reading
# raw points is cheap, and a rollup row per 64 steps costs a quarter of what one per 16 did at every flush.
OLD_ROLLUP_WIDTH = 16
NEW_ROLLUP_WIDTH = 64


def _rebuild_rollups(width: int) -> None:
    """Every rollup cell again, at `width` steps a cell, from the points in `metric`: the cell's last point, its min
    and max (PostgreSQL orders NaN above every number, so a NaN max wins and the min skips it, as ingest does), and
    its count."""
    op.execute("DELETE FROM metric_rollup")
    op.execute(
        "INSERT INTO metric_rollup (run_id, key, cell, last_step, last_value, last_wall_time, min_value, max_value, "
        "count) "
        "SELECT cell.run_id, cell.key, cell.cell, point.step, point.value, point.wall_time, cell.min_value, "
        "cell.max_value, cell.count "
        f"FROM (SELECT run_id, key, step / {width} AS cell, max(step) AS last_step, min(value) AS min_value, "
        f"      max(value) AS max_value, count(*) AS count FROM metric GROUP BY run_id, key, step / {width}) AS cell "
        "JOIN metric AS point ON point.run_id = cell.run_id AND point.key = cell.key AND point.step = cell.last_step")


def _compress_chunks_with_lz4_where_supported(conn: sa.Connection) -> None:
    """PostgreSQL compresses a chunk's arrays (TOAST) with pglz by default: measured, ~1.1 µs more backend CPU per
    point stored than lz4, which is even cheaper than not compressing (less to write). A server built without lz4
    keeps pglz."""
    if conn.dialect.name != 'postgresql':
        return
    lz4 = conn.execute(sa.text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                               "WHERE name = 'default_toast_compression'")).scalar()
    if lz4:
        op.execute("ALTER TABLE metric_chunk ALTER COLUMN step_bytes SET COMPRESSION lz4, "
                   "ALTER COLUMN value_bytes SET COMPRESSION lz4, ALTER COLUMN wall_time_bytes SET COMPRESSION lz4")


def upgrade() -> None:
    op.create_table('metric_chunk',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('first_step', sa.BigInteger(), nullable=False),
    sa.Column('last_step', sa.BigInteger(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('step_bytes', sa.LargeBinary(), nullable=False),
    sa.Column('value_bytes', sa.LargeBinary(), nullable=False),
    sa.Column('wall_time_bytes', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_metric_chunk_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'seq', 'key', name=op.f('pk_metric_chunk'))
    )
    with op.batch_alter_table('metric_chunk', schema=None) as batch_op:
        batch_op.create_index('ix_metric_chunk_key_steps', ['run_id', 'key', 'last_step', 'first_step'], unique=False)

    _compress_chunks_with_lz4_where_supported(op.get_bind())
    # The points stored so far, a chunk per flush and key (steps are distinct per key, so chunks never overlap).
    _copy_points_to_chunks(op.get_bind())
    _rebuild_rollups(NEW_ROLLUP_WIDTH)
    op.drop_table('metric_flush')
    op.drop_table('metric')


def downgrade() -> None:
    op.create_table('metric',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('step', sa.BigInteger(), nullable=False),
    sa.Column('value', sa.Double(), nullable=False),
    sa.Column('wall_time', sa.Double(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_metric_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'key', 'step', name=op.f('pk_metric')),
    sqlite_with_rowid=False
    )
    op.create_table('metric_flush',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('first_step', sa.BigInteger(), nullable=False),
    sa.Column('last_step', sa.BigInteger(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_metric_flush_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'seq', 'key', name=op.f('pk_metric_flush')),
    sqlite_with_rowid=False
    )
    # Every chunk back as its points, and as its row of the replay index.
    _copy_chunks_to_points(op.get_bind())
    _rebuild_rollups(OLD_ROLLUP_WIDTH)
    op.drop_table('metric_chunk')  # and its index
