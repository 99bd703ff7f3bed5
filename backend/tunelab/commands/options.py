"""The exit codes and the options every client verb shares; argparse only, so that registering the verbs costs
nothing."""

import argparse
import json
import math
import sys
from enum import IntEnum
from typing import NoReturn


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # the watched run failed, or the server refused the request (409, 413) or failed at it (5xx)
    USAGE = 2  # bad flags, file or params (argparse's own code too; the server's 400 and 422)
    NOT_FOUND = 3
    AUTH = 4  # no token, a token the server refuses (401), or not allowed (403)
    UNREACHABLE = 5  # no connection to the server, or it answered that a part it needs is down (503)
    TIMEOUT = 6  # the server took the request but did not answer within the read timeout: up, and busy


EXIT_CODES_HELP = """exit codes:
  0  ok (runs watch: the run succeeded)
  1  failure: runs watch's run failed; the server refused the request (409, 413) or failed at it (5xx)
  2  usage error: bad flags, file or params, nothing sent (the server's 400 and 422 too); runs watch: the run was
     canceled
  3  not found (the run, dataset or project)
  4  authentication: no token, a token the server refuses, or not allowed
  5  server unreachable: no connection within the connect timeout (or it answered 503: its database or queue is
     down)
  6  the server took the request but did not answer within the read timeout (--read-timeout): it is up, and busy.
     A launch or clone may have been made: run it again with the --idempotency-key the error names, to get that run
     instead of a second one
with --json, the answer is one JSON document on stdout, an error too: {"error": {"code", "message", "details"}}"""


def client_options() -> argparse.ArgumentParser:
    """Options every client verb takes (after the verb: `tunelab runs list --json`)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--json", action="store_true", help="print one JSON document (machine-readable)")
    options.add_argument("--url", help="the server (default: TUNELAB_URL, then the one `tunelab login` saved, "
                         "then http://127.0.0.1:8000)")
    options.add_argument("--token", help="an API token (default: TUNELAB_TOKEN, then the one `tunelab login` saved)")
    options.add_argument("--connect-timeout", type=seconds, metavar="SECONDS",
                         help="longest wait for a connection (default: TUNELAB_CONNECT_TIMEOUT_S, else 10)")
    options.add_argument("--read-timeout", type=seconds, metavar="SECONDS",
                         help="longest wait for the server's answer once connected (default: TUNELAB_READ_TIMEOUT_S, "
                         "else 60)")
    return options


def seconds(text: str) -> float:
    """argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"a number of seconds above 0, not {text!r}")
    return value


class ArgumentParser(argparse.ArgumentParser):
    """argparse's, except that with --json on the command line a usage error is one JSON document on stdout too, so
    that a script reads every failure the same way."""

    def error(self, message: str) -> NoReturn:
        if "--json" in sys.argv[1:]:
            print(json.dumps({"error": {"code": "VALIDATION_ERROR", "message": message, "details": None}}))
            sys.exit(ExitCode.USAGE)
        super().error(message)
