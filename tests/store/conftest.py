"""A real S3-compatible server for the store's tests: moto's standalone server (`moto_server`), started here on a free
loopback port, one per test session; each test gets a bucket of its own."""

import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import _free_port, wait_for

# The credentials every client of the server uses: a test finds them in no log, no artifact and no API answer.
ACCESS_KEY = "AKIATUNELABTEST00001"
SECRET_KEY = "tunelab-secret-never-shown-Xy7q"


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def client(self):
        import boto3

        return boto3.session.Session().client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                                              aws_secret_access_key=SECRET_KEY, region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"tunelab-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session")
def s3_server(data_dir) -> S3Server:
    port = _free_port()
    binary = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    assert binary, "moto[server] is a test dependency (pyproject.toml)"
    with (data_dir / "moto.log").open("ab") as log:
        process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        assert process.poll() is None, (data_dir / "moto.log").read_text()[-2000:]
        try:
            return httpx.get(f"{endpoint}/moto-api/", timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    wait_for(answering, 60, 0.2, "moto's S3 server to start")
    yield S3Server(endpoint, process)
    process.terminate()
    process.wait(timeout=15)


def store_environment(server: S3Server, bucket: str, **more: str) -> dict[str, str]:
    """The TUNELAB_* and AWS_* variables of a Tunelab whose artifact store is `bucket` on the server."""
    return {"TUNELAB_ARTIFACT_URL": f"s3://{bucket}/artifacts", "TUNELAB_S3_ENDPOINT_URL": server.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1",
            **more}


@pytest.fixture
def s3_settings(s3_server, tmp_path, monkeypatch):
    """Settings of this process with the store on a fresh bucket (and a data dir of the test's own)."""
    from tunelab.core.settings import Settings

    bucket = s3_server.new_bucket()
    for name, value in store_environment(s3_server, bucket).items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    return Settings(data_dir=tmp_path / "var", artifact_url=f"s3://{bucket}/artifacts",
                    s3_endpoint_url=s3_server.endpoint, database_url="sqlite://")
