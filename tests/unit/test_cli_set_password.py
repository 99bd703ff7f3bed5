"""`tunelab set-password`: the way back in for a locked-out admin, run on the server."""

import subprocess
import sys
import uuid

from sqlalchemy import select

from tunelab.core.security import verify_password
from tunelab.db.models import User, UserSession
from tunelab.db.session import session_scope
from tunelab.services.accounts import auth, users
from tunelab.services.accounts.principal import Actor


def _set_password(email: str, password: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunelab.cli", "set-password", email, *flags], input=password + "\n",
                          capture_output=True, text=True, timeout=120)


def test_set_password_replaces_it_ends_sessions_and_can_restore_an_admin(migrated_db, settings):
    email = f"locked-out-{uuid.uuid4().hex[:8]}@tunelab.test"
    with session_scope() as session:
        user = users.create_user(session, settings, Actor(None, "test"), email, "Locked Out", "old password 1",
                                 is_admin=False, project_id=None, role=None).user
        auth.start_session(session, settings, user)

    done = _set_password(email.upper(), "brand new password", "--admin")

    assert done.returncode == 0, done.stderr
    with session_scope() as session:
        user = session.scalar(select(User).where(User.email == email))
        assert verify_password(user.password_hash, "brand new password")
        assert not verify_password(user.password_hash, "old password 1")
        assert user.is_admin and user.is_active
        assert session.scalar(select(UserSession).where(UserSession.user_id == user.id)) is None


def test_set_password_refuses_an_unknown_email_and_a_short_password(migrated_db):
    unknown = _set_password("nobody@tunelab.test", "long enough password")
    assert unknown.returncode != 0 and "no account uses nobody@tunelab.test" in unknown.stderr
    short = _set_password("nobody@tunelab.test", "short")
    assert short.returncode != 0 and "at least 8 characters" in short.stderr
