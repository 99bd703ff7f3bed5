"""run_tag (a run's tags, filtered on, so a table and not a JSON column) and run.notes

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'run_tag',
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('tag', sa.String(length=50), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_run_tag_run_id_run'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('run_id', 'tag', name=op.f('pk_run_tag')),
    )
    with op.batch_alter_table('run_tag', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_tag_tag'), ['tag'], unique=False)
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('notes', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_column('notes')
    with op.batch_alter_table('run_tag', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_tag_tag'))
    op.drop_table('run_tag')
