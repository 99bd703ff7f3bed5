"""Passwords (argon2id), random tokens stored only as hashes, and CSRF tokens derived from the session."""

import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# argon2-cffi's defaults are argon2id with RFC 9106's low-memory profile (t=3, m=64 MiB, p=4).
_hasher = PasswordHasher()
# Verified when the email matches no user, so a wrong email costs as long as a wrong password.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))

SESSION_COOKIE = "tunelab_session"
CSRF_COOKIE = "tunelab_csrf"
CSRF_HEADER = "X-CSRF-Token"
SHARE_HEADER = "X-Share-Token"
API_TOKEN_PREFIX = "tlk_"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def new_token(prefix: str = "", nbytes: int = 32) -> str:
    return prefix + secrets.token_urlsafe(nbytes)


def token_hash(token: str) -> str:
    """What the database keeps of a token: SHA-256 is enough for 256 random bits (nothing to brute-force)."""
    return hashlib.sha256(token.encode()).hexdigest()


def same_hash(stored: str, token: str) -> bool:
    return hmac.compare_digest(stored, token_hash(token))


def csrf_token(secret_key: str, session_token: str) -> str:
    return hmac.new(secret_key.encode(), b"csrf:" + session_token.encode(), hashlib.sha256).hexdigest()


def csrf_matches(secret_key: str, session_token: str, presented: str | None) -> bool:
    # Compared as bytes: compare_digest refuses str with non-ASCII characters, which a header can carry.
    return presented is not None and hmac.compare_digest(csrf_token(secret_key, session_token).encode(),
                                                         presented.encode())
