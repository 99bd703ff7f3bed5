import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The installed console script, as a user runs it (the module itself where the environment has no scripts).
_SCRIPT = Path(sys.executable).with_name("tunelab")
TUNELAB = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "tunelab.cli"]


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def cli_env(api_server, admin_token, tmp_path) -> dict[str, str]:
    """The environment of a user's shell pointed at the session's API, with a config file of its own. The read
    timeout is long: at load 12-50 the session's API took more than the default to answer a launch, and a request
    that is answered late is not a failure of what the tests check (tests/cli/test_cli_timeouts.py checks the
    timeouts themselves)."""
    return {**os.environ, "TUNELAB_URL": api_server, "TUNELAB_TOKEN": admin_token,
            "TUNELAB_CONFIG": str(tmp_path / "tunelab-config.json"), "COLUMNS": "200", "TUNELAB_READ_TIMEOUT_S": "600"}


@pytest.fixture
def cli(cli_env):
    """Run the real `tunelab` command; its exit code and output."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> CliResult:
        done = subprocess.run([*TUNELAB, *args], capture_output=True, text=True, input=input, env=env or cli_env,
                              timeout=timeout)
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run
