"""Migration 0012 (idempotency_key) upgrades from 0011 and downgrades to it on SQLite and PostgreSQL, keeping what
0011 had, and the key is unique per user."""

import pytest
import sqlalchemy as sa

from tunelab.db.migrate import downgrade, upgrade


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'migrations.db'}"
    return request.getfixturevalue("pg_url")


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_0012_adds_idempotency_keys_unique_per_user_and_downgrades_to_0011(empty_db_url):
    upgrade(empty_db_url, "0011")
    engine = sa.create_engine(empty_db_url)
    try:
        assert "idempotency_key" not in _tables(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO user_account (email, display_name, is_admin, is_active, created_at) "
                                 "VALUES ('a@tunelab.test', 'a', false, true, CURRENT_TIMESTAMP)"))
        upgrade(empty_db_url, "0012")
        assert "idempotency_key" in _tables(engine)
        insert = sa.text("INSERT INTO idempotency_key (user_id, key, endpoint, request_hash, resource_id, created_at) "
                         "SELECT id, :key, 'POST /api/v1/runs', 'h', 1, CURRENT_TIMESTAMP FROM user_account")
        with engine.begin() as conn:
            conn.execute(insert, {"key": "k1"})
            conn.execute(insert, {"key": "k2"})
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(insert, {"key": "k1"})
        index_names = {index["name"] for index in sa.inspect(engine).get_indexes("idempotency_key")}
        assert "ix_idempotency_key_created_at" in index_names

        downgrade(empty_db_url, "0011")
        assert "idempotency_key" not in _tables(engine)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT email FROM user_account")).scalars().all() == ["a@tunelab.test"]
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0011"
        upgrade(empty_db_url)
        assert "idempotency_key" in _tables(engine)
    finally:
        engine.dispose()
