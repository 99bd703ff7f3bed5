"""The client address that sign-in limits count against and the access log names: the connection's, unless the
connection comes from a proxy the deployment trusts (TUNELAB_TRUSTED_PROXIES); then X-Forwarded-For's."""

import httpx

from tests.conftest import ApiProcess, fresh_install

GUESS = {"email": "nobody@client-address.test", "password": "a guess"}


def _sign_ins(tmp_path, assets, name: str, forwarded_for: list[str], **settings: str) -> tuple[list[int], str]:
    """The statuses of failed sign-ins claiming to come from `forwarded_for`, on an API of their own whose address
    limit is 2, and its log."""
    env = fresh_install(tmp_path, assets, name, TUNELAB_SIGNIN_MAX_ATTEMPTS_PER_ADDRESS="2", **settings)
    server = ApiProcess(tmp_path / "api.log", env)
    try:
        with httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=60) as http:
            statuses = [http.post("/auth/sign-in", json=GUESS, headers={"X-Forwarded-For": address}).status_code
                        for address in forwarded_for]
    finally:
        server.stop()  # the access log is written by then
    return statuses, (tmp_path / "api.log").read_text()


def test_x_forwarded_for_from_a_client_that_is_no_trusted_proxy_is_ignored(assets, redis_url, tmp_path):
    """By default no proxy is trusted, the API's own host included: a client cannot spread its failed sign-ins
    over made-up addresses."""
    statuses, log = _sign_ins(tmp_path, assets, "no-proxy", ["203.0.113.1", "203.0.113.2", "203.0.113.3"])

    assert statuses == [401, 401, 429]
    assert "203.0.113." not in log
    assert log.count('INFO:     127.0.0.1:') >= 3


def test_x_forwarded_for_from_a_trusted_proxy_names_the_client(assets, redis_url, tmp_path):
    statuses, log = _sign_ins(tmp_path, assets, "behind-proxy",
                              ["203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.1"],
                              TUNELAB_TRUSTED_PROXIES="127.0.0.1")

    assert statuses == [401, 401, 401, 429]
    assert log.count('INFO:     203.0.113.1:') == 3 and log.count('INFO:     203.0.113.2:') == 1
