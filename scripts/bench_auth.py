"""Benchmarks talk to a fresh Tunelab: create its first admin and an API token, as a newcomer's script would."""

import httpx

BENCH_ADMIN = {"email": "bench@tunelab.local", "display_name": "bench", "password": "benchmark password"}


def admin_token(base_url: str) -> str:
    """First admin (a cookie session), then an API token made with that session and its CSRF header."""
    with httpx.Client(base_url=base_url, timeout=60) as browser_like:
        browser_like.post("/api/v1/auth/first-admin", json=BENCH_ADMIN).raise_for_status()
        created = browser_like.post("/api/v1/auth/tokens", json={"name": "bench"},
                                    headers={"X-CSRF-Token": browser_like.cookies["tunelab_csrf"]})
        created.raise_for_status()
        return created.json()["token"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
