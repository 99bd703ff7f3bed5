"""Signing in and out, browser sessions, API tokens, and turning presented credentials into a Principal."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.security import (
    API_TOKEN_PREFIX,
    new_token,
    same_hash,
    token_hash,
    verify_password,
)
from tunelab.core.settings import Settings
from tunelab.db.base import utcnow
from tunelab.db.models import ApiToken, User, UserSession
from tunelab.services.accounts import shares, signin_limits
from tunelab.services.accounts.principal import Principal

BAD_CREDENTIALS = "email or password is incorrect"
LAST_USED_RESOLUTION = timedelta(minutes=1)


def normalize_email(email: str) -> str:
    return email.strip().lower()


# Sign-in ---------------------------------------------------------------------------------------------------------

@dataclass
class NewSession:
    user: User
    token: str
    expires_at: datetime


def start_session(session: Session, settings: Settings, user: User) -> NewSession:
    token = new_token()
    expires_at = utcnow() + timedelta(hours=settings.session_ttl_hours)
    session.add(UserSession(user_id=user.id, token_hash=token_hash(token), expires_at=expires_at))
    user.last_sign_in_at = utcnow()
    return NewSession(user, token, expires_at)


def sign_in(session: Session, settings: Settings, email: str, password: str, client_address: str) -> NewSession:
    """The same answer, in the same time, for an unknown email and a wrong password: no user enumeration."""
    email = normalize_email(email)
    attempt = signin_limits.Attempt(client_address, email)
    signin_limits.check(session, settings, attempt)
    user = session.scalar(select(User).where(User.email == email))
    ok = verify_password(user.password_hash if user else None, password)
    if not ok or user is None or not user.is_active:
        signin_limits.count_failure(session, settings, attempt)
        raise AppError("INVALID_CREDENTIALS", BAD_CREDENTIALS)
    signin_limits.clear(session, settings, attempt)
    return start_session(session, settings, user)


def sign_out(session: Session, session_token: str | None) -> None:
    if session_token:
        session.execute(delete(UserSession).where(UserSession.token_hash == token_hash(session_token)))


# Resolving credentials --------------------------------------------------------------------------------------------

def _user_from_session_cookie(session: Session, cookie: str) -> User | None:
    found = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(cookie)))
    if found is None or not same_hash(found.token_hash, cookie) or found.expires_at <= utcnow():
        return None
    user = session.get(User, found.user_id)
    return user if user is not None and user.is_active else None


def _user_from_api_token(session: Session, bearer: str) -> User:
    invalid = AppError("INVALID_TOKEN", "the API token is not valid: it may be mistyped, revoked or expired")
    if not bearer.startswith(API_TOKEN_PREFIX):
        raise invalid
    found = session.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(bearer)))
    if found is None or not same_hash(found.token_hash, bearer) or found.revoked_at is not None:
        raise invalid
    if found.expires_at is not None and found.expires_at <= utcnow():
        raise invalid
    user = session.get(User, found.user_id)
    if user is None or not user.is_active:
        raise invalid
    now = utcnow()
    # At most one write a minute per token: the metrics hot path must not turn every read into a write.
    if found.last_used_at is None or now - found.last_used_at > LAST_USED_RESOLUTION:
        found.last_used_at = now
    return user


def resolve_principal(session: Session, *, bearer: str | None, share_token: str | None,
                      session_cookie: str | None) -> Principal:
    """Precedence: an API token, then a share token, then the browser session. A bad API token or share token is
    an error (the caller meant to use it); a stale cookie is only 'not signed in'."""
    if bearer:
        return Principal(via="token", user=_user_from_api_token(session, bearer))
    if share_token:
        return Principal(via="share", share=shares.resolve(session, share_token))
    if session_cookie:
        user = _user_from_session_cookie(session, session_cookie)
        if user is not None:
            return Principal(via="session", user=user, session_token=session_cookie)
    return Principal()


# API tokens -------------------------------------------------------------------------------------------------------

def create_api_token(session: Session, user: User, name: str, expires_in_days: int | None) -> tuple[ApiToken, str]:
    secret = new_token(API_TOKEN_PREFIX)
    expires_at = utcnow() + timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken(user_id=user.id, name=name, token_hash=token_hash(secret), hint=secret[:10],
                     expires_at=expires_at)
    session.add(token)
    session.flush()
    return token, secret


def list_api_tokens(session: Session, user: User) -> list[ApiToken]:
    stmt = select(ApiToken).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
    return list(session.scalars(stmt.order_by(ApiToken.id.desc())))


def revoke_api_token(session: Session, user: User, token_id: int) -> None:
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id or token.revoked_at is not None:
        raise AppError("TOKEN_NOT_FOUND", f"API token {token_id} does not exist", {"token_id": token_id})
    token.revoked_at = utcnow()
