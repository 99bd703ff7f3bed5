"""An address that does not look like one is refused with words a person reads, not the pattern behind the check."""

import pytest

from tests.api.teams_helpers import error_of

API = "/api/v1"
HUMAN_MESSAGE = "enter an email address like name@example.com"


@pytest.mark.parametrize("email", ["not-an-address", "two@at@signs", "space in@x.y"])
def test_a_new_user_with_a_malformed_email_is_told_what_an_address_looks_like(client, email):
    error = error_of(client.post(f"{API}/users", json={"email": email, "password": "long enough pw"}), 422,
                     "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "email"
    assert error["details"][0]["message"] == HUMAN_MESSAGE
    assert error["message"] == f"email: {HUMAN_MESSAGE}"


def test_the_first_admin_form_says_the_same(anonymous_client):
    response = anonymous_client.post(f"{API}/auth/first-admin", json={"email": "nobody", "password": "long enough pw"})
    assert error_of(response, 422, "VALIDATION_ERROR")["details"][0]["message"] == HUMAN_MESSAGE


def test_the_schema_still_tells_clients_the_pattern(client):
    schema = client.get(f"{API}/openapi.json").json()["components"]["schemas"]["UserCreate"]
    assert schema["properties"]["email"]["pattern"] == r"^[^@\s]+@[^@\s]+$"
