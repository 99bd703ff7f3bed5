"""pipeline and pipeline_stage: runs that start from runs, launched together; share_link.pipeline_id

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

import tunelab.db.base

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('pipeline',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', tunelab.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['created_by_id'], ['user_account.id'], name=op.f('fk_pipeline_created_by_id_user_account'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], name=op.f('fk_pipeline_project_id_project'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pipeline'))
    )
    with op.batch_alter_table('pipeline', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pipeline_project_id'), ['project_id'], unique=False)
    op.create_table('pipeline_stage',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pipeline_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('state', sa.Enum('waiting', 'launched', 'canceled', 'failed', name='stagestate', native_enum=False, length=20),
              nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['pipeline_id'], ['pipeline.id'], name=op.f('fk_pipeline_stage_pipeline_id_pipeline'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_pipeline_stage_run_id_run'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pipeline_stage')),
    sa.UniqueConstraint('pipeline_id', 'position', name=op.f('uq_pipeline_stage_pipeline_id'))
    )
    with op.batch_alter_table('pipeline_stage', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pipeline_stage_pipeline_id'), ['pipeline_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_pipeline_stage_run_id'), ['run_id'], unique=False)
    with op.batch_alter_table('share_link', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pipeline_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_share_link_pipeline_id_pipeline'), 'pipeline', ['pipeline_id'],
                                    ['id'], ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('share_link', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_share_link_pipeline_id_pipeline'), type_='foreignkey')
        batch_op.drop_column('pipeline_id')
    with op.batch_alter_table('pipeline_stage', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pipeline_stage_run_id'))
        batch_op.drop_index(batch_op.f('ix_pipeline_stage_pipeline_id'))
    op.drop_table('pipeline_stage')
    with op.batch_alter_table('pipeline', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pipeline_project_id'))
    op.drop_table('pipeline')
