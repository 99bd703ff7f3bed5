"""Accounts: the first admin of a fresh install, users created or invited by admins, invitations, open sign-up."""

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.security import hash_password, new_token, token_hash
from tunelab.core.settings import Settings
from tunelab.db.base import utcnow
from tunelab.db.models import Project, ProjectMember, Role, User, UserSession
from tunelab.db.models.project import DEFAULT_PROJECT
from tunelab.services.accounts import audit
from tunelab.services.accounts.auth import normalize_email
from tunelab.services.accounts.principal import Actor

MIN_PASSWORD_LENGTH = 8


def needs_first_admin(session: Session) -> bool:
    return not session.scalar(select(func.count(User.id)))


def _insert_user(session: Session, email: str, display_name: str, password: str | None, is_admin: bool) -> User:
    email = normalize_email(email)
    if session.scalar(select(User.id).where(User.email == email)) is not None:
        raise AppError("EMAIL_TAKEN", f"email: {email} already has an account", {"field": "email"})
    user = User(email=email, display_name=display_name.strip() or email.split("@")[0],
                password_hash=hash_password(password) if password else None, is_admin=is_admin)
    session.add(user)
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise AppError("EMAIL_TAKEN", f"email: {email} already has an account", {"field": "email"}) from None
    return user


def create_first_admin(session: Session, email: str, display_name: str, password: str) -> User:
    """The first account on a fresh install: an admin who owns the `default` project and so all earlier data."""
    # Serialise concurrent first visits on the default project's row (PostgreSQL; SQLite writes one at a time).
    default = session.scalar(select(Project).where(Project.name == DEFAULT_PROJECT).with_for_update())
    if not needs_first_admin(session):
        raise AppError("SETUP_DONE", "this Tunelab already has an admin; sign in instead")
    user = _insert_user(session, email, display_name, password, is_admin=True)
    if default is not None:
        session.add(ProjectMember(project_id=default.id, user_id=user.id, role=Role.owner))
        audit.record(session, default.id, Actor(user.id, user.email), "member.add", "user", user.id,
                     f"{user.email} created the first admin account and owns this project", role="owner")
    return user


@dataclass
class CreatedUser:
    user: User
    invite_token: str | None


def create_user(session: Session, settings: Settings, actor: Actor, email: str, display_name: str,
                password: str | None, is_admin: bool, project_id: int | None, role: Role | None) -> CreatedUser:
    """An admin creates an account, with a password, or as an invitation the invitee completes by choosing one."""
    user = _insert_user(session, email, display_name, password, is_admin)
    invite = _issue_invite(settings, user) if password is None else None
    if project_id is not None:
        member_role = role or Role.viewer
        session.add(ProjectMember(project_id=project_id, user_id=user.id, role=member_role))
        verb = "invited" if invite else "added"
        audit.record(session, project_id, actor, "member.add", "user", user.id,
                     f"{actor.label} {verb} {user.email} as {member_role.value}", role=member_role.value)
    return CreatedUser(user, invite)


def _issue_invite(settings: Settings, user: User) -> str:
    invite = new_token()
    user.invite_token_hash = token_hash(invite)
    user.invite_expires_at = utcnow() + timedelta(hours=settings.invite_ttl_hours)
    return invite


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise AppError("USER_NOT_FOUND", f"user {user_id} does not exist", {"user_id": user_id})
    return user


def reissue_invite(session: Session, settings: Settings, user: User) -> str:
    """A fresh invitation link for an account that has not chosen its password yet; the old link stops working."""
    if not user.invite_pending:
        raise AppError("INVITE_ACCEPTED", f"{user.email} has already joined; they sign in with their password")
    return _issue_invite(settings, user)


def update_user(session: Session, actor_user: User, user: User, is_active: bool | None, is_admin: bool | None) -> User:
    """Deactivate (their sessions end and their API tokens stop working at once) or change admin rights; an admin
    cannot lock themselves out, and the last active admin stays one."""
    if user.id == actor_user.id and (is_active is False or is_admin is False):
        raise AppError("FORBIDDEN", "you cannot deactivate yourself or drop your own admin rights; ask another admin")
    if is_active is not None:
        user.is_active = is_active
        if not is_active:
            session.execute(delete(UserSession).where(UserSession.user_id == user.id))
    if is_admin is not None:
        user.is_admin = is_admin
    session.flush()
    active_admins = session.scalar(select(func.count(User.id)).where(User.is_admin, User.is_active))
    if not active_admins:
        raise AppError("LAST_ADMIN", "Tunelab needs at least one active admin; make someone else admin first")
    return user


def set_password(session: Session, email: str, password: str, make_admin: bool) -> User:
    """Server-side recovery: a new password (the invitation, if pending, is used up), sessions ended."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AppError("VALIDATION_ERROR", f"password: at least {MIN_PASSWORD_LENGTH} characters")
    user = session.scalar(select(User).where(User.email == normalize_email(email)))
    if user is None:
        raise AppError("USER_NOT_FOUND", f"no account uses {normalize_email(email)}")
    user.password_hash = hash_password(password)
    user.invite_token_hash = user.invite_expires_at = None
    session.execute(delete(UserSession).where(UserSession.user_id == user.id))
    if make_admin:
        user.is_admin = user.is_active = True
    return user


def invitation(session: Session, token: str) -> User:
    user = session.scalar(select(User).where(User.invite_token_hash == token_hash(token)))
    if (user is None or not user.is_active or not user.invite_pending or user.invite_expires_at is None
            or user.invite_expires_at <= utcnow()):
        raise AppError("INVITE_INVALID", "this invitation link is not valid: it may have been used or have expired; "
                       "ask an admin for a new one")
    return user


def accept_invite(session: Session, token: str, password: str, display_name: str | None) -> User:
    user = invitation(session, token)
    user.password_hash = hash_password(password)
    user.invite_token_hash = None
    user.invite_expires_at = None
    if display_name and display_name.strip():
        user.display_name = display_name.strip()
    return user


def sign_up(session: Session, settings: Settings, email: str, display_name: str, password: str) -> User:
    if not settings.open_signup:
        raise AppError("SIGNUP_CLOSED", "sign-up is closed on this Tunelab; ask an admin to invite you")
    return _insert_user(session, email, display_name, password, is_admin=False)


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.id)))
