"""Where the SDK and the CLI find the server and the token.

An explicit argument wins, then TUNELAB_URL / TUNELAB_TOKEN, then the file `tunelab login` writes
(TUNELAB_CONFIG, default $XDG_CONFIG_HOME/tunelab/config.json), then the embedded server's address.
Imports nothing heavy: the SDK must load in a notebook without torch.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class ClientConfig:
    url: str
    token: str | None


def config_path() -> Path:
    if explicit := os.environ.get("TUNELAB_CONFIG"):
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "tunelab" / "config.json"


def _saved() -> dict[str, str]:
    path = config_path()
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not a Tunelab config file ({error}); run `tunelab login` again") from error
    return {k: v for k, v in saved.items() if isinstance(v, str)} if isinstance(saved, dict) else {}


def load_client_config(url: str | None = None, token: str | None = None) -> ClientConfig:
    saved = _saved()
    resolved_url = url or os.environ.get("TUNELAB_URL") or saved.get("url") or DEFAULT_URL
    resolved_token = token or os.environ.get("TUNELAB_TOKEN") or saved.get("token")
    return ClientConfig(url=resolved_url.rstrip("/"), token=resolved_token or None)


def save_login(url: str, token: str) -> Path:
    """Write the server and token for later commands, readable by this user only (the token is a credential)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump({"url": url.rstrip("/"), "token": token}, handle)
    os.chmod(path, 0o600)
    return path
