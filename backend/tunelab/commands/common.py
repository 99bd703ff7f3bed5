"""What every client verb shares: the connection, one way to print (a rich view or one JSON document) and the exit
codes a script can rely on."""

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

from tunelab.client.config import client_timeouts, load_client_config
from tunelab.client.http import ApiClient, TunelabError
from tunelab.commands.options import ExitCode

# 128 + SIGPIPE: what a shell reports for a process whose reader closed the pipe.
CLOSED_PIPE_EXIT = 141


class CommandError(Exception):
    """A client-side refusal (usage, not found) shown like the server's errors."""

    def __init__(self, exit_code: ExitCode, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.code = code
        self.message = message
        self.details = details


def usage_error(field: str, message: str) -> CommandError:
    return CommandError(ExitCode.USAGE, "VALIDATION_ERROR", f"{field}: {message}", {"field": field})


def exit_code_for(error: TunelabError) -> ExitCode:
    if error.code == "SERVER_TIMEOUT":
        return ExitCode.TIMEOUT
    if error.code == "SERVER_UNREACHABLE" or error.status == 503:
        return ExitCode.UNREACHABLE
    if error.status in (401, 403):
        return ExitCode.AUTH
    if error.status == 404:
        return ExitCode.NOT_FOUND
    if error.status in (400, 422):
        return ExitCode.USAGE
    return ExitCode.FAILED


@dataclass
class Context:
    """One invocation: its arguments, the API client and where to print."""

    args: argparse.Namespace
    out: Console
    err: Console
    _client: ApiClient | None = None

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def timeouts(self) -> tuple[float, float]:
        """(connect, read) seconds: the flags, else TUNELAB_CONNECT_TIMEOUT_S / TUNELAB_READ_TIMEOUT_S, else defaults."""
        try:
            return client_timeouts(getattr(self.args, "connect_timeout", None), getattr(self.args, "read_timeout", None))
        except ValueError as error:  # the message names the variable
            raise CommandError(ExitCode.USAGE, "VALIDATION_ERROR", str(error)) from None

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            connect_timeout_s, read_timeout_s = self.timeouts
            try:
                config = load_client_config(getattr(self.args, "url", None), getattr(self.args, "token", None),
                                            connect_timeout_s, read_timeout_s)
            except ValueError as error:  # the config file is not one; the message says which and what to do
                raise CommandError(ExitCode.USAGE, "VALIDATION_ERROR", str(error)) from None
            if not config.token:
                raise CommandError(ExitCode.AUTH, "AUTH_REQUIRED", f"no token for {config.url}: run `tunelab login`, "
                                   "or set TUNELAB_TOKEN")
            self._client = ApiClient(config)
        return self._client

    def emit(self, document: Any, render: Callable[[], None]) -> None:
        """The answer: one JSON document with --json, else the human view."""
        if self.json:
            print(json.dumps(document, indent=2, default=str))
        else:
            render()


def run_command(handler: Callable[[Context], int | None], args: argparse.Namespace) -> NoReturn:
    """Run a client verb and exit with its code; every error is printed once, in the one error shape."""
    context = Context(args, Console(), Console(stderr=True))
    try:
        code = handler(context) or ExitCode.OK
    except TunelabError as error:
        code = _report(context, error.code, error.message, error.details, exit_code_for(error))
    except CommandError as error:
        code = _report(context, error.code, error.message, error.details, error.exit_code)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        # The reader of the output went away (`tunelab metrics export … | head -3`): stop quietly, as cat does, with
        # the status a shell gives a process ended by SIGPIPE; stdout goes to /dev/null so that the interpreter's
        # final flush does not fail on the closed pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = CLOSED_PIPE_EXIT
    finally:
        if context._client is not None:
            context._client.close()
    sys.exit(int(code))


def _report(context: Context, code: str, message: str, details: Any, exit_code: ExitCode) -> ExitCode:
    if context.json:
        print(json.dumps({"error": {"code": code, "message": message, "details": details}}, indent=2, default=str))
    else:
        context.err.print(f"[red]error[/red] {code}: {escape(message)}", highlight=False)
        for line in describe_details(details):
            context.err.print(f"  {line}", highlight=False, markup=False)
    return exit_code


def describe_details(details: Any) -> list[str]:
    """The server's field errors, one line each: `params.r: …` (a 422's list), `line 3: messages: …` (a
    dataset's)."""
    if isinstance(details, list):
        return [f"{error.get('field') or '?'}: {error.get('message', '')}" for error in details
                if isinstance(error, dict)]
    lines: list[str] = []
    if isinstance(details, dict) and isinstance(details.get("errors"), list):
        for error in details["errors"]:
            if isinstance(error, dict):
                where = f"line {error['line']}" if error.get("line") is not None else "file"
                field = f": {error['field']}" if error.get("field") else ""
                lines.append(f"{where}{field}: {error.get('message', '')}")
        if details.get("more_errors"):
            lines.append(f"… and {details['more_errors']} more")
    return lines
