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
    result = subprocess.run([binary, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    services = subprocess.run([binary, "-f", str(ROOT / "docker-compose.yml"), "config", "--services"],
                              capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert {"postgres", "redis", "api", "worker-cpu", "worker-gpu"} <= set(services)
