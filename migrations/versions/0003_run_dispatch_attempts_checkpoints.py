"""runs: one recorded dispatch per queued run, attempts and resumes, checkpoint step, force stop

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('force_stop_requested', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('attempt', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('auto_resumes', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('dispatched_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dispatch_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('dispatch_epoch', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('checkpoint_step', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('start_step', sa.Integer(), nullable=False, server_default='0'))
    # Runs that trained before this revision started once.
    op.execute("UPDATE run SET attempt = 1 WHERE started_at IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_column('start_step')
        batch_op.drop_column('checkpoint_step')
        batch_op.drop_column('dispatch_epoch')
        batch_op.drop_column('dispatch_id')
        batch_op.drop_column('dispatched_at')
        batch_op.drop_column('auto_resumes')
        batch_op.drop_column('attempt')
        batch_op.drop_column('force_stop_requested')
