"""The API serves the built web UI: assets by path, index.html for deep links, JSON errors under /api."""

import pytest

from tunelab.core.settings import get_settings


@pytest.fixture
def built_ui():
    index = get_settings().frontend_dir / "index.html"
    if not index.exists():
        pytest.skip("the web UI is not built (make frontend)")
    return index


def test_deep_link_reload_serves_the_app(client, built_ui):
    for path in ("/", "/runs/42", "/compare?runs=1,2", "/datasets"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert '<div id="root">' in response.text


def test_unknown_api_path_is_a_json_404_not_the_app(client, built_ui):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_static_asset_is_served_and_traversal_is_not(client, built_ui):
    assets = sorted((built_ui.parent / "assets").glob("*.js"))
    assert assets
    response = client.get(f"/assets/{assets[0].name}")
    assert response.status_code == 200 and "javascript" in response.headers["content-type"]
    escaped = client.get("/..%2F..%2Fpyproject.toml")
    assert "tunelab" not in escaped.text or '<div id="root">' in escaped.text
