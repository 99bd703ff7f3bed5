"""Settings that refuse an unsafe production secret; passwords, tokens and CSRF tokens."""

import hashlib

import pytest
from pydantic import ValidationError

from tunelab.core.security import (
    API_TOKEN_PREFIX,
    csrf_matches,
    csrf_token,
    hash_password,
    new_token,
    same_hash,
    token_hash,
    verify_password,
)
from tunelab.core.settings import EXAMPLE_SECRET_KEY, Settings

SECRET = "k" * 64


@pytest.fixture
def settings_from(monkeypatch, tmp_path):
    """Settings from the arguments alone: no TUNELAB_* variable and no .env file of the developer's."""
    monkeypatch.delenv("TUNELAB_SECRET_KEY", raising=False)
    monkeypatch.delenv("TUNELAB_ENVIRONMENT", raising=False)
    return lambda **values: Settings(_env_file=None, data_dir=tmp_path, **values)


@pytest.mark.parametrize("secret_key", [None, EXAMPLE_SECRET_KEY, "s" * 31], ids=["default", "example", "short"])
def test_production_refuses_an_unsafe_secret_key(settings_from, secret_key):
    values = {} if secret_key is None else {"secret_key": secret_key}
    with pytest.raises(ValidationError, match="TUNELAB_SECRET_KEY"):
        settings_from(environment="production", **values)


def test_production_accepts_a_long_random_secret_key(settings_from):
    assert settings_from(environment="production", secret_key=SECRET).secret_key == SECRET


def test_development_runs_with_the_example_key(settings_from):
    assert settings_from().secret_key == EXAMPLE_SECRET_KEY


def test_passwords_are_hashed_with_argon2id_and_salted():
    first, second = hash_password("correct horse"), hash_password("correct horse")
    assert first.startswith("$argon2id$") and "correct horse" not in first
    assert first != second
    assert verify_password(first, "correct horse") and verify_password(second, "correct horse")


@pytest.mark.parametrize("stored", [hash_password("correct horse"), None, "", "not a hash"],
                         ids=["other-password", "no-hash", "empty", "garbage"])
def test_verify_password_refuses(stored):
    assert verify_password(stored, "battery staple") is False


def test_tokens_are_random_and_stored_as_sha256():
    first, second = new_token(API_TOKEN_PREFIX), new_token(API_TOKEN_PREFIX)
    assert first.startswith("tlk_") and first != second and len(first) > 40
    assert token_hash(first) == hashlib.sha256(first.encode()).hexdigest()
    assert same_hash(token_hash(first), first) and not same_hash(token_hash(first), second)


def test_csrf_token_matches_only_its_session_and_key():
    token = csrf_token(SECRET, "session-a")
    assert csrf_matches(SECRET, "session-a", token)
    for presented in (None, "", "wrong", csrf_token(SECRET, "session-b"), csrf_token("j" * 64, "session-a"),
                      token[:-1], token + "0", "é" + token[1:]):
        assert csrf_matches(SECRET, "session-a", presented) is False, presented
