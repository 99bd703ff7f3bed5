"""metric_flush: the replay index as one row per flush and key (its step range) instead of ix_metric_run_id_seq, an
index entry per point

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
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
    # The flushes stored so far, from the index that is dropped next.
    op.execute("INSERT INTO metric_flush (run_id, seq, key, first_step, last_step, count) "
               "SELECT run_id, seq, key, min(step), max(step), count(*) FROM metric GROUP BY run_id, seq, key")
    op.drop_index('ix_metric_run_id_seq', table_name='metric')


def downgrade() -> None:
    op.create_index('ix_metric_run_id_seq', 'metric', ['run_id', 'seq'], unique=False)
    op.drop_table('metric_flush')
