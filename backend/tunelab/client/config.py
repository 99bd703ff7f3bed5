"""Where the SDK and the CLI find the server and the token, and how long they wait for it.

An explicit argument wins, then TUNELAB_URL / TUNELAB_TOKEN, then the file `tunelab login` writes
(TUNELAB_CONFIG, default $XDG_CONFIG_HOME/tunelab/config.json), then the embedded server's address. The timeouts:
an explicit argument, then TUNELAB_CONNECT_TIMEOUT_S / TUNELAB_READ_TIMEOUT_S, then the defaults below.
Imports nothing heavy: the SDK must load in a notebook without torch.
"""

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"
# A server that does not take the connection within seconds is not there; one that took it may be busy for a while
# before it answers (a launch under load), and answering late is not being unreachable.
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ClientConfig:
    url: str
    token: str | None
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S  # to open a connection
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S  # for the answer once the request is sent


def _seconds(explicit: float | None, variable: str, default: float) -> float:
    raw = os.environ.get(variable) if explicit is None else explicit
    if raw is None:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{variable}: a number of seconds above 0, not {raw!r}")
    return seconds


def client_timeouts(connect_timeout_s: float | None = None, read_timeout_s: float | None = None) -> tuple[float, float]:
    """(connect, read) seconds: the arguments, else the environment, else the defaults; ValueError naming a bad one."""
    return (_seconds(connect_timeout_s, "TUNELAB_CONNECT_TIMEOUT_S", DEFAULT_CONNECT_TIMEOUT_S),
            _seconds(read_timeout_s, "TUNELAB_READ_TIMEOUT_S", DEFAULT_READ_TIMEOUT_S))


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


def load_client_config(url: str | None = None, token: str | None = None, connect_timeout_s: float | None = None,
                       read_timeout_s: float | None = None) -> ClientConfig:
    connect, read = client_timeouts(connect_timeout_s, read_timeout_s)
    saved = _saved()
    resolved_url = url or os.environ.get("TUNELAB_URL") or saved.get("url") or DEFAULT_URL
    resolved_token = token or os.environ.get("TUNELAB_TOKEN") or saved.get("token")
    return ClientConfig(url=resolved_url.rstrip("/"), token=resolved_token or None, connect_timeout_s=connect,
                        read_timeout_s=read)


def make_private_folder(folder: Path) -> None:
    """Create `folder` and its missing parents as 0700, whatever the umask; folders already there are left as they
    are (the parent of an explicit TUNELAB_CONFIG may be anyone's)."""
    missing = [f for f in (folder, *folder.parents) if not f.exists()]
    for created in reversed(missing):
        try:
            created.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process of this user
            continue
        os.chmod(created, 0o700)  # mkdir's mode is masked by the umask


def open_private(path: Path, flags: int) -> int:
    """A descriptor on `path`, created 0600 or made 0600 if it was there before (an older SDK wrote 0644)."""
    make_private_folder(path.parent)
    descriptor = os.open(path, flags | os.O_CREAT, 0o600)
    os.fchmod(descriptor, 0o600)
    return descriptor


def save_login(url: str, token: str) -> Path:
    """Write the server and token for later commands, readable by this user only (the token is a credential)."""
    path = config_path()
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_TRUNC), "w") as handle:
        json.dump({"url": url.rstrip("/"), "token": token}, handle)
    return path
