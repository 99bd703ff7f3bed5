"""study: runs launched together with a matched budget; run.study_id and share_link.study_id point to it

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('study',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['created_by_id'], ['user_account.id'], name=op.f('fk_study_created_by_id_user_account'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], name=op.f('fk_study_project_id_project'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_study'))
    )
    with op.batch_alter_table('study', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_study_project_id'), ['project_id'], unique=False)
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('study_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_run_study_id'), ['study_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_run_study_id_study'), 'study', ['study_id'], ['id'],
                                    ondelete='SET NULL')
    with op.batch_alter_table('share_link', schema=None) as batch_op:
        batch_op.add_column(sa.Column('study_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_share_link_study_id_study'), 'study', ['study_id'], ['id'],
                                    ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('share_link', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_share_link_study_id_study'), type_='foreignkey')
        batch_op.drop_column('study_id')
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_run_study_id_study'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_run_study_id'))
        batch_op.drop_column('study_id')
    with op.batch_alter_table('study', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_study_project_id'))
    op.drop_table('study')
