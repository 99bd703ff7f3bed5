"""run.base_run_id: the run whose trained weights a run started from (SFT after continued pretraining, DPO after SFT)

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('base_run_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_run_base_run_id'), ['base_run_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_run_base_run_id_run'), 'run', ['base_run_id'], ['id'],
                                    ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_run_base_run_id_run'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_run_base_run_id'))
        batch_op.drop_column('base_run_id')
