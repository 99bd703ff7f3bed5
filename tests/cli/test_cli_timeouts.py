"""A busy server is not an unreachable one, and launches are safe to retry: the real `tunelab` command against the
session's real API, directly or through a proxy that answers launches late (the run is created, its answer is not)."""

import uuid

import pytest

from tests.api.teams_helpers import IDLE_QUEUE
from tests.slow_proxy import SlowProxy
from tests.worker.conftest import TINY_MODEL

HELD_S = 120.0  # longer than any test: the proxy lets a held answer go when it closes


def launch_args(name: str, *extra: str) -> tuple[str, ...]:
    return ("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks", "--queue",
            IDLE_QUEUE, "--param", "max_steps=2", "--param", "max_length=64", "--name", name, "--json", *extra)


def runs_named(api, name: str) -> list[int]:
    return [run["id"] for run in api.get("/runs", params={"q": name, "limit": 200}).json()["data"]
            if run["name"] == name]


@pytest.fixture
def slow_launches(api_server, cli):
    """A proxy whose POST /runs answers wait: pass the delays, one per try. The API has launched a run first (its
    first launch loads the training libraries), so that only the proxy is slow."""
    assert cli(*launch_args(f"warm-up-{uuid.uuid4().hex[:8]}")).code == 0
    proxies: list[SlowProxy] = []

    def start(*delays: float) -> SlowProxy:
        proxies.append(SlowProxy(api_server, "POST", "/api/v1/runs", list(delays)))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()


def test_a_launch_answered_late_is_sent_again_with_its_key_and_made_once(cli, api, slow_launches):
    proxy = slow_launches(HELD_S)  # the first try's answer never comes in time; the resend's comes at once
    name = f"late-{uuid.uuid4().hex[:8]}"
    launched = cli(*launch_args(name, "--url", proxy.url, "--read-timeout", "8"))
    assert launched.code == 0, launched.stdout + launched.stderr
    keys = [headers["idempotency-key"] for headers in proxy.held]
    assert len(keys) == 2 and keys[0] == keys[1], "the resend carries the first try's key"
    assert runs_named(api, name) == [launched.json()["id"]]


def test_a_launch_never_answered_in_time_says_so_exits_6_and_its_key_gets_the_run(cli, api, slow_launches):
    proxy = slow_launches(HELD_S, HELD_S, HELD_S)
    name = f"busy-{uuid.uuid4().hex[:8]}"
    timed_out = cli(*launch_args(name, "--url", proxy.url, "--read-timeout", "4"))
    assert timed_out.code == 6, timed_out.stdout + timed_out.stderr
    error = timed_out.json()["error"]
    assert error["code"] == "SERVER_TIMEOUT"
    assert error["message"].startswith("the server did not answer within 4 s"), error["message"]
    assert "unreachable" not in error["message"]
    key = error["details"]["idempotency_key"]
    assert [headers["idempotency-key"] for headers in proxy.held] == [key] * 3
    created = runs_named(api, name)
    assert len(created) == 1, "the server made the run once, although no answer came back"

    again = cli(*launch_args(name, "--idempotency-key", key))
    assert again.code == 0, again.stdout + again.stderr
    assert again.json()["id"] == created[0] and runs_named(api, name) == created


def test_read_and_connect_timeouts_are_flags_and_settings(cli, cli_env):
    slow = cli("runs", "list", "--read-timeout", "0.001")
    assert slow.code == 6, slow.stdout + slow.stderr
    assert "SERVER_TIMEOUT: the server did not answer within 0.001 s" in slow.stderr
    from_env = cli("runs", "list", "--json", env={**cli_env, "TUNELAB_READ_TIMEOUT_S": "0.001"})
    assert from_env.code == 6 and from_env.json()["error"]["details"]["read_timeout_s"] == 0.001
    flag_wins = cli("runs", "list", "--json", "--read-timeout", "60", env={**cli_env, "TUNELAB_READ_TIMEOUT_S": "0.001"})
    assert flag_wins.code == 0, flag_wins.stdout

    bad_env = cli("runs", "list", "--json", env={**cli_env, "TUNELAB_CONNECT_TIMEOUT_S": "soon"})
    assert bad_env.code == 2 and bad_env.json()["error"]["message"].startswith("TUNELAB_CONNECT_TIMEOUT_S: ")
    bad_flag = cli("runs", "list", "--json", "--read-timeout", "0")
    assert bad_flag.code == 2 and "--read-timeout" in bad_flag.json()["error"]["message"]
    refused = cli("runs", "list", "--url", "http://127.0.0.1:9", "--json", "--connect-timeout", "2")
    assert refused.code == 5 and refused.json()["error"]["code"] == "SERVER_UNREACHABLE"
    help_text = cli("runs", "launch", "--help").stdout
    assert "  6  the server took the request but did not answer within the read timeout" in help_text
