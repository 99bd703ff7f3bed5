"""Migrations upgrade and downgrade on SQLite and PostgreSQL, and agree with the models."""

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tunelab.db.base import Base
from tunelab.db.migrate import downgrade, upgrade


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'migrations.db'}"
    return request.getfixturevalue("pg_url")


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_matches_models_and_downgrade_empties(empty_db_url):
    upgrade(empty_db_url)
    assert _tables(empty_db_url) == set(Base.metadata.tables)
    engine = sa.create_engine(empty_db_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert conn.execute(sa.text("SELECT name FROM project")).scalar_one() == "default"
    engine.dispose()
    downgrade(empty_db_url)
    assert _tables(empty_db_url) == set()
    upgrade(empty_db_url)
    assert _tables(empty_db_url) == set(Base.metadata.tables)
