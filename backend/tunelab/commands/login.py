"""`tunelab login [--url U] [--token T]`: check a token against the server and save both for later commands."""

import getpass
import sys

from tunelab.client.config import load_client_config, save_login
from tunelab.client.http import ApiClient
from tunelab.commands.common import CommandError, Context, ExitCode


def _ask_token(url: str) -> str:
    """Not echoed at a terminal; the first line of stdin for scripts."""
    if sys.stdin.isatty():
        return getpass.getpass(f"API token for {url} (create one under Account → API tokens): ")
    return sys.stdin.readline().strip()


def login(ctx: Context) -> None:
    args = ctx.args
    url = load_client_config(args.url).url
    token = (args.token or _ask_token(url)).strip()
    if not token:
        raise CommandError(ExitCode.USAGE, "VALIDATION_ERROR", "--token: required (none given or typed)",
                           {"field": "token"})
    with ApiClient(load_client_config(url, token)) as client:
        me = client.get("/auth/me")
    path = save_login(url, token)
    user = me["user"]
    ctx.emit({"url": url, "user": user, "config_path": str(path)},
             lambda: ctx.out.print(f"logged in to {url} as {user['email']}; saved to {path}"))
