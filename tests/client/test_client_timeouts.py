"""The SDK's HTTP layer against a real `tunelab api`: a server that answers late is a timeout, not an unreachable
server, with connect and read timeouts of their own; and `tunelab.init` creates its run once when the first answer
comes late (a proxy holds it back while the run is created)."""

import uuid

import pytest

import tunelab
from tests.slow_proxy import SlowProxy
from tunelab.client.config import ClientConfig, load_client_config
from tunelab.client.http import ApiClient, NoAnswer, ServerTimeout, ServerUnreachable


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNELAB_CONFIG", str(tmp_path / "no-config.json"))
    for variable in ("TUNELAB_CONNECT_TIMEOUT_S", "TUNELAB_READ_TIMEOUT_S"):
        monkeypatch.delenv(variable, raising=False)


def test_a_late_answer_is_a_timeout_that_says_so_and_a_refused_connection_is_unreachable(api_server, admin_token):
    with ApiClient(ClientConfig(api_server, admin_token, read_timeout_s=0.001)) as slow, \
            pytest.raises(ServerTimeout) as late:
        slow.get("/runs")
    assert late.value.code == "SERVER_TIMEOUT" and isinstance(late.value, NoAnswer)
    assert late.value.message.startswith("the server did not answer within 0.001 s")
    assert late.value.details == {"read_timeout_s": 0.001}
    with ApiClient(ClientConfig("http://127.0.0.1:9", None, connect_timeout_s=2)) as nobody, \
            pytest.raises(ServerUnreachable) as refused:
        nobody.get("/health")
    assert refused.value.code == "SERVER_UNREACHABLE"


def test_the_timeouts_are_settings_of_the_client(monkeypatch):
    assert (load_client_config().connect_timeout_s, load_client_config().read_timeout_s) == (10.0, 60.0)
    monkeypatch.setenv("TUNELAB_CONNECT_TIMEOUT_S", "2.5")
    monkeypatch.setenv("TUNELAB_READ_TIMEOUT_S", "300")
    config = load_client_config()
    assert (config.connect_timeout_s, config.read_timeout_s) == (2.5, 300.0)
    assert load_client_config(read_timeout_s=7).read_timeout_s == 7  # an argument wins
    for bad in ("soon", "0", "-1", "inf", "nan"):
        monkeypatch.setenv("TUNELAB_READ_TIMEOUT_S", bad)
        with pytest.raises(ValueError, match="TUNELAB_READ_TIMEOUT_S: a number of seconds above 0"):
            load_client_config()


def test_init_whose_first_answer_comes_late_creates_one_run(api_server, admin_token, api, monkeypatch):
    # Once through the API first: its first request of a kind may be slow, and only the proxy should be.
    api.get("/runs", params={"limit": 1})
    proxy = SlowProxy(api_server, "POST", "/api/v1/runs", [120.0])
    monkeypatch.setenv("TUNELAB_READ_TIMEOUT_S", "5")
    name = f"sdk-late-{uuid.uuid4().hex[:8]}"
    try:
        run = tunelab.init(url=proxy.url, token=admin_token, name=name, config={"lr": 1e-3})
        run.finish()
    finally:
        proxy.close()
    keys = [headers["idempotency-key"] for headers in proxy.held]
    assert len(keys) == 2 and keys[0] == keys[1], "the resend carries the first try's key"
    named = [r["id"] for r in api.get("/runs", params={"q": name, "limit": 200}).json()["data"] if r["name"] == name]
    assert named == [run.id]
    assert api.get(f"/runs/{run.id}").json()["status"] == "succeeded"
