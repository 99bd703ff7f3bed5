"""Each API process remembers who a token or browser session is for a few seconds (services/accounts/principal_cache), and a
change of rights made through any process is obeyed by every other one at once, not after that time."""

import time

import httpx

from tests.conftest import ApiProcess, first_admin_tokens, fresh_install, wait_for

API = "/api/v1"
PASSWORD = "a long enough password"
# principal_cache.TTL_S is 10 s: a refusal sooner than this came from the change being announced.
MUCH_SOONER_THAN_TTL_S = 2.0


def _refused_soon(call, status: int) -> float:
    started = time.monotonic()
    wait_for(lambda: call().status_code == status, MUCH_SOONER_THAN_TTL_S, 0.01, f"a {status} from the other process")
    return time.monotonic() - started


def test_revoked_tokens_and_dropped_members_are_refused_at_once_by_another_api_process(assets, redis_url, tmp_path):
    env = fresh_install(tmp_path, assets, "rights")
    process_a, process_b = ApiProcess(tmp_path / "a.log", env), ApiProcess(tmp_path / "b.log", env)
    admin_token, doomed = first_admin_tokens(process_a.base_url, "admin", "doomed")
    admin = httpx.Client(base_url=f"{process_a.base_url}{API}", timeout=30,
                         headers={"Authorization": f"Bearer {admin_token['token']}"})
    on_b = httpx.Client(base_url=f"{process_b.base_url}{API}", timeout=30)
    try:
        doomed_headers = {"Authorization": f"Bearer {doomed['token']}"}
        run = admin.post("/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True,
                                        "name": "logged from a script"}).raise_for_status().json()

        def log_a_point():  # the metrics hot path, where the remembered caller and run cost no SQL read
            return on_b.post(f"/runs/{run['id']}/metrics", headers=doomed_headers,
                             json={"points": [{"key": "train/loss", "step": 0, "value": 1.0}]})

        for _ in range(3):  # B reads the token once, then remembers it
            assert on_b.get("/runs", headers=doomed_headers).status_code == 200
            assert log_a_point().status_code == 200
        admin.delete(f"/auth/tokens/{doomed['id']}").raise_for_status()
        _refused_soon(log_a_point, 401)
        assert on_b.get("/runs", headers=doomed_headers).status_code == 401

        project = admin.post("/projects", json={"name": "rights"}).raise_for_status().json()
        email = "viewer@tunelab.test"
        user = admin.post("/users", json={"email": email, "display_name": "Viewer", "password": PASSWORD,
                                          "project_id": project["id"]}).raise_for_status().json()["user"]
        admin.patch(f"/projects/{project['id']}/members/{user['id']}", json={"role": "viewer"}).raise_for_status()
        on_b.post("/auth/sign-in", json={"email": email, "password": PASSWORD}).raise_for_status()
        for _ in range(3):  # the browser session and its memberships, remembered by B
            assert on_b.get(f"/projects/{project['id']}").status_code == 200
        admin.delete(f"/projects/{project['id']}/members/{user['id']}").raise_for_status()
        _refused_soon(lambda: on_b.get(f"/projects/{project['id']}"), 404)
    finally:
        admin.close()
        on_b.close()
        process_a.stop()
        process_b.stop()
