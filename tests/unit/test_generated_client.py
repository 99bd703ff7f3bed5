"""The frontend's typed client is generated from the OpenAPI document; a committed client that no longer
matches the API fails here (run `make client`)."""

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


def test_frontend_calls_the_api_only_through_the_generated_client():
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "frontend" / "src").rglob("*.ts*")
        if "client" not in path.parts and path.name != "client.ts" and "fetch(\"/api" in path.read_text()
    ]
    assert not offenders, f"hand-written API calls (use src/api/client.ts): {offenders}"
