"""The frontend's typed client is generated from the OpenAPI document; a committed client that no longer
matches the API fails here (run `make client`). That nothing calls the API beside it is the frontend lint's rule
(frontend/eslint.config.js, shown refusing a hand-written fetch by src/boundaries.test.ts)."""

import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "frontend" / "src" / "client"


def test_committed_client_matches_the_api(tmp_path):
    if not (ROOT / "frontend" / "node_modules" / ".bin" / "openapi-typescript").exists():
        if IN_CI:
            pytest.fail("frontend/node_modules missing: `make test` runs `npm ci` first")
        pytest.skip("frontend dependencies not installed (cd frontend && npm ci)")
    subprocess.run([str(ROOT / "scripts" / "generate-client.sh"), str(tmp_path)], check=True, cwd=ROOT)
    for name in ("openapi.json", "schema.d.ts"):
        fresh, committed = (tmp_path / name).read_text(), (CLIENT / name).read_text()
        assert fresh == committed, f"frontend/src/client/{name} is stale: run `make client` and commit it"

