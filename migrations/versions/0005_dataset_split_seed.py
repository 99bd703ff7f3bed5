"""dataset.split_seed: the seed that picks a dataset's eval split, fixed with the dataset

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.add_column(sa.Column('split_seed', sa.Integer(), nullable=True))
    # Existing datasets get the seed a new upload of the same bytes gets (services.catalog.datasets.split_seed_for), written
    # out here because a migration must not change when that code does.
    dataset = sa.table('dataset', sa.column('id', sa.Integer()), sa.column('content_hash', sa.String()),
                       sa.column('split_seed', sa.Integer()))
    bind = op.get_bind()
    for dataset_id, content_hash in bind.execute(sa.select(dataset.c.id, dataset.c.content_hash)).all():
        bind.execute(dataset.update().where(dataset.c.id == dataset_id)
                     .values(split_seed=int(content_hash[:7], 16)))
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.alter_column('split_seed', existing_type=sa.Integer(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_column('split_seed')
