import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def migration_db_url(request, tmp_path) -> str:
    """An empty database of each backend, for tests that walk the migrations up and down."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'migrations.db'}"
    return request.getfixturevalue("pg_url")
