"""signin_failures: failed sign-in counters kept in SQL while Redis is unreachable

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('signin_failures',
    sa.Column('key', sa.String(length=400), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('window_ends_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_signin_failures'))
    )
    with op.batch_alter_table('signin_failures', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_signin_failures_window_ends_at'), ['window_ends_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('signin_failures', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_signin_failures_window_ends_at'))
    op.drop_table('signin_failures')
