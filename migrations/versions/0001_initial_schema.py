"""initial schema

Revision ID: 0001
Revises: 
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('project',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('created_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_project')),
    sa.UniqueConstraint('name', name=op.f('uq_project_name'))
    )
    op.create_table('dataset',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('format', sa.String(length=20), nullable=False),
    sa.Column('path', sa.String(length=500), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('row_count', sa.Integer(), nullable=False),
    sa.Column('stats', sa.JSON(), nullable=False),
    sa.Column('bundled', sa.Boolean(), nullable=False),
    sa.Column('created_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], name=op.f('fk_dataset_project_id_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dataset'))
    )
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dataset_content_hash'), ['content_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_dataset_project_id'), ['project_id'], unique=False)

    op.create_table('run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('objective', sa.String(length=30), nullable=False),
    sa.Column('method', sa.String(length=30), nullable=False),
    sa.Column('model', sa.String(length=500), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=True),
    sa.Column('dataset_hash', sa.String(length=64), nullable=True),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('queue', sa.String(length=50), nullable=False),
    sa.Column('external', sa.Boolean(), nullable=False),
    sa.Column('status', sa.Enum('queued', 'running', 'succeeded', 'failed', 'canceled', name='runstatus', native_enum=False, length=20), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('queued_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('started_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('heartbeat_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('worker', sa.String(length=200), nullable=True),
    sa.Column('versions', sa.JSON(), nullable=False),
    sa.Column('current_step', sa.Integer(), nullable=False),
    sa.Column('total_steps', sa.Integer(), nullable=True),
    sa.Column('progress_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('metric_seq', sa.Integer(), nullable=False),
    sa.Column('trainable_params', sa.BigInteger(), nullable=True),
    sa.Column('total_params', sa.BigInteger(), nullable=True),
    sa.Column('peak_memory_bytes', sa.BigInteger(), nullable=True),
    sa.Column('wall_time_s', sa.Double(), nullable=True),
    sa.Column('tokens_per_second', sa.Double(), nullable=True),
    sa.Column('final_eval_loss', sa.Double(), nullable=True),
    sa.Column('best_eval_loss', sa.Double(), nullable=True),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], name=op.f('fk_run_dataset_id_dataset'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], name=op.f('fk_run_project_id_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run'))
    )
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_run_project_id'), ['project_id'], unique=False)
        batch_op.create_index('ix_run_status_queue', ['status', 'queue'], unique=False)

    op.create_table('artifact',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('path', sa.String(length=500), nullable=False),
    sa.Column('kind', sa.String(length=30), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('created_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_artifact_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_artifact')),
    sa.UniqueConstraint('run_id', 'path', name=op.f('uq_artifact_run_id'))
    )
    with op.batch_alter_table('artifact', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_artifact_run_id'), ['run_id'], unique=False)

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
    with op.batch_alter_table('metric', schema=None) as batch_op:
        batch_op.create_index('ix_metric_run_id_seq', ['run_id', 'seq'], unique=False)

    op.create_table('metric_summary',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('last_step', sa.BigInteger(), nullable=False),
    sa.Column('last_value', sa.Double(), nullable=False),
    sa.Column('min_value', sa.Double(), nullable=False),
    sa.Column('max_value', sa.Double(), nullable=False),
    sa.Column('count', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_metric_summary_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'key', name=op.f('pk_metric_summary'))
    )
    op.create_table('metric_rollup',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('cell', sa.BigInteger(), nullable=False),
    sa.Column('last_step', sa.BigInteger(), nullable=False),
    sa.Column('last_value', sa.Double(), nullable=False),
    sa.Column('last_wall_time', sa.Double(), nullable=False),
    sa.Column('min_value', sa.Double(), nullable=False),
    sa.Column('max_value', sa.Double(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_metric_rollup_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'key', 'cell', name=op.f('pk_metric_rollup')),
    sqlite_with_rowid=False
    )
    # Every run and dataset belongs to a project; until teams land there is one.
    project = sa.table("project", sa.column("name", sa.String), sa.column("created_at", tunelab.db.base.UTCDateTime))
    op.bulk_insert(project, [{"name": "default", "created_at": tunelab.db.base.utcnow()}])


def downgrade() -> None:
    op.drop_table('metric_rollup')
    op.drop_table('metric_summary')
    with op.batch_alter_table('metric', schema=None) as batch_op:
        batch_op.drop_index('ix_metric_run_id_seq')

    op.drop_table('metric')
    with op.batch_alter_table('artifact', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_artifact_run_id'))

    op.drop_table('artifact')
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index('ix_run_status_queue')
        batch_op.drop_index(batch_op.f('ix_run_project_id'))
        batch_op.drop_index(batch_op.f('ix_run_dataset_id'))

    op.drop_table('run')
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dataset_project_id'))
        batch_op.drop_index(batch_op.f('ix_dataset_content_hash'))

    op.drop_table('dataset')
    op.drop_table('project')
