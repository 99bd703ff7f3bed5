"""Who is asking: a signed-in user (browser session or API token), a share-link holder, or nobody."""

from dataclasses import dataclass, field
from typing import Literal

from tunelab.core.errors import AppError
from tunelab.db.models import Role, ShareLink, User


@dataclass(frozen=True)
class Actor:
    """What the audit log records of whoever made a change."""

    user_id: int | None
    label: str


SYSTEM = Actor(None, "system")


@dataclass
class Principal:
    via: Literal["anonymous", "session", "token", "share"] = "anonymous"
    user: User | None = None
    share: ShareLink | None = None
    # The session token behind a cookie principal: CSRF tokens are derived from it.
    session_token: str | None = None
    # project_id -> role, filled on first use.
    roles: dict[int, Role] | None = field(default=None, repr=False)

    @property
    def signed_in_user(self) -> User:
        """The user behind a token or browser session (always there behind the signed_in policy)."""
        if self.user is None:
            raise AppError("AUTH_REQUIRED", "sign in, or send an API token as `Authorization: Bearer <token>`")
        return self.user

    @property
    def actor(self) -> Actor:
        if self.user is not None:
            return Actor(self.user.id, self.user.email)
        return Actor(None, "share link" if self.share is not None else "anonymous")
