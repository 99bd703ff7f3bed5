"""Annotated dependencies: the session owns the transaction, so routes never commit."""

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from tunelab.core.settings import Settings, get_settings
from tunelab.db.session import get_sessionmaker
from tunelab.services.evaluation.playground import GenerationBroker
from tunelab.services.runs.exports import ExportBroker
from tunelab.services.runs.queue import Broker


def _commit(session: Session) -> None:
    with session:
        session.commit()


def _roll_back(session: Session) -> None:
    with session:
        session.rollback()


async def get_db(request: Request) -> AsyncIterator[Session]:
    """The request's session, once one of the app's `db_slots` is free. Waiting for a slot holds neither a thread
    nor a connection, and no more requests hold a transaction than there are threads (the pool has a connection
    for each): without the slots, a burst of requests could take every connection in a first query and then wait
    for a thread while every thread waits for a connection."""
    async with request.app.state.db_slots:
        session = get_sessionmaker()()
        try:
            yield session
            await run_in_threadpool(_commit, session)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(_roll_back, session)
            raise


# scope="function": commit before the response is sent, so a client that reads right after a 201 finds the row.
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_broker() -> Broker:
    """Where runs are sent to reach a worker (Celery on Redis); an override can put another broker in its place."""
    from tunelab.worker.broker import get_broker as celery_broker

    return celery_broker()


BrokerDep = Annotated[Broker, Depends(get_broker)]


def get_export_broker() -> ExportBroker:
    """Where merged-model exports are sent to reach a worker (Celery on Redis)."""
    from tunelab.worker.broker import get_broker as celery_broker

    return celery_broker()


ExportBrokerDep = Annotated[ExportBroker, Depends(get_export_broker)]


def get_generation_broker() -> GenerationBroker:
    """Where playground requests are sent to reach an inference worker (Celery on Redis)."""
    from tunelab.worker.broker import get_broker as celery_broker

    return celery_broker()


GenerationBrokerDep = Annotated[GenerationBroker, Depends(get_generation_broker)]
