"""The SDK's files hold a token and a project's metrics: the login file and the offline spool are readable by their
user only (0600, folders it makes 0700), whatever the umask of the script that writes them."""

import os
import stat
import time
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tunelab.client.config import ClientConfig, save_login
from tunelab.client.http import ApiClient
from tunelab.client.sender import PointSender

NOBODY_LISTENS = "http://127.0.0.1:9"  # the discard port: refused at once


@pytest.fixture
def open_umask():
    """The laxest umask: every file and folder is created as open as its creator asks."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_login_file_and_the_folders_it_makes_are_private(tmp_path, monkeypatch, open_umask):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    monkeypatch.setenv("TUNELAB_CONFIG", str(home / ".config" / "tunelab" / "config.json"))

    path = save_login("http://tunelab.example", "tl_a-secret-token")

    assert _mode(path) == 0o600
    assert _mode(path.parent) == _mode(path.parent.parent) == 0o700
    assert _mode(home) == 0o755  # a folder that was there is left as it was
    path.chmod(0o644)  # as an older SDK wrote it
    save_login("http://tunelab.example", "tl_another-token")
    assert _mode(path) == 0o600


def test_the_offline_spool_and_its_folder_are_private(tmp_path, open_umask):
    spool = tmp_path / "config" / "spool" / "server-run-1.jsonl"
    with ApiClient(ClientConfig(NOBODY_LISTENS, None)) as api:
        sender = PointSender(api, 1, spool, flush_interval_s=0.05)
        try:
            sender.put(("train/loss", 1, 1.0, time.time()))
            wait_for(spool.exists, 10, interval=0.02, message="the point to be spooled")
            first = spool.stat().st_ino
            assert _mode(spool) == 0o600
            assert _mode(spool.parent) == _mode(spool.parent.parent) == 0o700
            # A retry that cannot deliver writes what is left to a new file and renames it over the spool.
            wait_for(lambda: spool.stat().st_ino != first, 10, interval=0.02, message="a retry to rewrite the spool")
            assert _mode(spool) == 0o600
        finally:
            sender.close(0)
