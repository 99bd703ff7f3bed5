"""Set-up shared by the API tests: the admin's client and a cookie-less client (module-scoped, so each module signs
in once), and a SQL session on SQLite and on PostgreSQL for the tests that check a query on both databases."""

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.api.teams_helpers import bearer, stateless_client
from tunelab.db.migrate import upgrade
from tunelab.db.session import make_engine


@pytest.fixture(scope="module")
def admin(app, admin_token):
    with TestClient(app, headers=bearer(admin_token)) as admin_client:
        yield admin_client


@pytest.fixture(scope="module")
def http(app, admin):
    return stateless_client(app)


@pytest.fixture(scope="module")
def migrated_pg(pg_url) -> str:
    upgrade(pg_url)
    return pg_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def session(request):
    """A session on each database in turn, inside a transaction rolled back afterwards: nothing it writes stays."""
    url = request.getfixturevalue("migrated_db" if request.param == "sqlite" else "migrated_pg")
    engine = make_engine(url)
    with engine.connect() as connection:
        transaction = connection.begin()
        with Session(bind=connection, join_transaction_mode="create_savepoint") as session:
            yield session
        transaction.rollback()
    engine.dispose()
