"""Alembic environment: the URL comes from the caller's config or from Tunelab's settings."""

from alembic import context
from sqlalchemy import pool

from tunelab.db.base import Base
from tunelab.db.models import *  # noqa: F403  (registers every table on Base.metadata)
from tunelab.db.session import make_engine

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from tunelab.core.settings import get_settings

    return get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection) -> None:
    # Batch mode lets ALTERs work on SQLite, which cannot alter most things in place: it rebuilds the table (copy,
    # drop, rename). With foreign keys on, that drop is a DELETE that cascades into every table referencing it (a
    # run's metrics, tags, artifacts…), so they are off while migrating. SQLite ignores the pragma inside a
    # transaction: it is set, and committed, before the migrations' transaction begins.
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    try:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                          compare_type=True)
        with context.begin_transaction():
            context.run_migrations()
    finally:
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
