"""run_export: merged-model exports of a run, made by a worker

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('run_export',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.Enum('queued', 'running', 'succeeded', 'failed', name='exportstatus', native_enum=False,
                                length=20), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('requested_by', sa.String(length=320), nullable=False),
    sa.Column('queued_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('started_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('worker', sa.String(length=200), nullable=True),
    sa.Column('heartbeat_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_run_export_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_export'))
    )
    with op.batch_alter_table('run_export', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_export_run_id'), ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run_export', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_export_run_id'))
    op.drop_table('run_export')
