"""`tunelab login [--url U] [--token T]`: check a token (the flag, TUNELAB_TOKEN, or typed) against the server and
save both for later commands."""

import getpass
import os
import sys

from tunelab.client.config import DEFAULT_URL, ClientConfig, load_client_config, save_login
from tunelab.client.http import ApiClient
from tunelab.commands.common import CommandError, Context, ExitCode


def _ask_token(url: str) -> str:
    """Not echoed at a terminal; the first line of stdin for scripts."""
    if sys.stdin.isatty():
        return getpass.getpass(f"API token for {url} (the user menu → API tokens): ")
    return sys.stdin.readline().strip()


def login(ctx: Context) -> None:
    args = ctx.args
    try:
        url = load_client_config(args.url).url
    except ValueError:  # a broken config file: logging in again is how it is mended
        url = (args.url or os.environ.get("TUNELAB_URL") or DEFAULT_URL).rstrip("/")
    # As every verb: --token, then TUNELAB_TOKEN (a script's `TUNELAB_TOKEN=… tunelab login`), then asked.
    token = (args.token or os.environ.get("TUNELAB_TOKEN") or _ask_token(url)).strip()
    if not token:
        raise CommandError(ExitCode.USAGE, "VALIDATION_ERROR", "--token: required (none given or typed)",
                           {"field": "token"})
    connect_timeout_s, read_timeout_s = ctx.timeouts
    with ApiClient(ClientConfig(url, token, connect_timeout_s, read_timeout_s)) as client:
        me = client.get("/auth/me")
    path = save_login(url, token)
    user = me["user"]
    ctx.emit({"url": url, "user": user, "config_path": str(path)},
             lambda: ctx.out.print(f"logged in to {url} as {user['email']}; saved to {path}", markup=False))
