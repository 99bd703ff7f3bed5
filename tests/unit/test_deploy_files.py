import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]


def test_docker_compose_file_is_valid():
    binary = shutil.which("docker-compose")
    if binary is None:
        if IN_CI:
            pytest.fail("docker-compose is required in CI (make test installs it from Debian)")
        pytest.skip("docker-compose not installed (Debian package docker-compose)")
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNELAB_")}
    compose = [binary, "-f", str(ROOT / "docker-compose.yml"), "config"]
    refused = subprocess.run([*compose, "-q"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert refused.returncode != 0 and "TUNELAB_SECRET_KEY" in refused.stderr, "production needs a secret key"
    env["TUNELAB_SECRET_KEY"] = "0" * 64
    result = subprocess.run([*compose, "-q"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr
    services = subprocess.run([*compose, "--services"], capture_output=True, text=True, cwd=ROOT,
                              env=env).stdout.split()
    assert {"postgres", "redis", "api", "worker-cpu", "worker-gpu"} <= set(services)
