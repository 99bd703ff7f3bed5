"""Annotated dependencies: the session owns the transaction, so routes never commit."""

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends
from sqlalchemy.orm import Session

from tunelab.core.settings import Settings, get_settings
from tunelab.db.session import get_sessionmaker


def get_db() -> Iterator[Session]:
    session = get_sessionmaker()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


# scope="function": commit before the response is sent, so a client that reads right after a 201 finds the row.
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_dispatcher():
    """How a new run reaches a worker; tests and alternative queues can override this dependency."""
    from tunelab.worker.dispatch import send_train_run

    return send_train_run


DispatcherDep = Annotated[Callable[[int, str], None], Depends(get_dispatcher)]
