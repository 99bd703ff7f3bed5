"""Migration 0012 (idempotency_key) upgrades from 0011 and downgrades to it on SQLite and PostgreSQL, keeping what
0011 had, and the key is unique per user."""

import uuid

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
    # The session's PostgreSQL database may be at head already (other tests use it): start from 0011 either way.
    upgrade(empty_db_url, "0011")
    downgrade(empty_db_url, "0011")
    engine = sa.create_engine(empty_db_url)
    email = {"email": f"{uuid.uuid4().hex[:10]}@tunelab.test"}
    try:
        assert "idempotency_key" not in _tables(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO user_account (email, display_name, is_admin, is_active, created_at) "
                                 "VALUES (:email, 'a', false, true, CURRENT_TIMESTAMP)"), email)
        upgrade(empty_db_url, "0012")
        assert "idempotency_key" in _tables(engine)
        insert = sa.text("INSERT INTO idempotency_key (user_id, key, endpoint, request_hash, resource_id, created_at) "
                         "SELECT id, :key, 'POST /api/v1/runs', 'h', 1, CURRENT_TIMESTAMP FROM user_account "
                         "WHERE email = :email")
        with engine.begin() as conn:
            conn.execute(insert, {"key": "k1", **email})
            conn.execute(insert, {"key": "k2", **email})
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(insert, {"key": "k1", **email})
        index_names = {index["name"] for index in sa.inspect(engine).get_indexes("idempotency_key")}
        assert "ix_idempotency_key_created_at" in index_names

        downgrade(empty_db_url, "0011")
        assert "idempotency_key" not in _tables(engine)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM user_account WHERE email = :email"), email).scalar() == 1
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0011"
        upgrade(empty_db_url)
        assert "idempotency_key" in _tables(engine)
    finally:
        engine.dispose()
