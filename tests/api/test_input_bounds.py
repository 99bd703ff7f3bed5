"""Integers from a request are bounded before they reach SQL or Python: a forged cursor, a huge offset or an external
run's odd seed is a 4xx in the error shape naming the field, never a 500 (bigint or integer out of range,
OverflowError, islice's ValueError), on SQLite and PostgreSQL alike."""

import base64

import pytest

from tests.api.teams_helpers import API, error_of, unique
from tests.conftest import find_bundled_dataset
from tunelab.core.errors import AppError
from tunelab.schemas.common import MAX_ID
from tunelab.services import paging
from tunelab.services.catalog import datasets
from tunelab.services.evaluation import studies
from tunelab.services.runs import runs


def _offset_cursor(json_text: str) -> str:
    return base64.urlsafe_b64encode(json_text.encode()).decode()


# Each decodes to something json.loads accepts but no page of this API ever handed out: numbers past SQL's bigint
# and Python's int(), non-numbers, non-objects, and a document deep enough to exhaust json's recursion.
FORGED_OFFSET_CURSORS = [
    _offset_cursor('{"o": 1e308}'),
    _offset_cursor('{"o": 9223372036854775808}'),
    _offset_cursor('{"o": 9223372036854775807}'),
    _offset_cursor('{"o": Infinity}'),
    _offset_cursor('{"o": NaN}'),
    _offset_cursor('{"o": -1}'),
    _offset_cursor('{"o": 1.5}'),
    _offset_cursor('{"o": true}'),
    _offset_cursor('{"o": "5"}'),
    _offset_cursor("[1]"),
    _offset_cursor('"o"'),
    _offset_cursor("[" * 30_000),
    "x" * 5_000,
    "not base64!",
    "é",
]
FORGED_ID_CURSORS = ["9223372036854775808", "99999999999999999999", str(MAX_ID + 1), "0", "-1", "1e3", " 5", "٣",
                     "9" * 5_000]


def _cursor_error(call) -> None:
    with pytest.raises(AppError) as raised:
        call()
    assert (raised.value.code, raised.value.details) == ("INVALID_CURSOR", {"field": "cursor"})


@pytest.mark.parametrize("cursor", FORGED_OFFSET_CURSORS)
def test_a_forged_runs_cursor_is_refused_before_sql(session, cursor):
    _cursor_error(lambda: runs.list_runs(session, project_ids=[1], cursor=cursor))


@pytest.mark.parametrize("cursor", FORGED_ID_CURSORS)
def test_a_forged_dataset_or_study_cursor_is_refused_before_sql(session, cursor):
    _cursor_error(lambda: datasets.list_datasets(session, [1], 20, cursor))
    _cursor_error(lambda: studies.list_studies(session, [1], 20, cursor))


def test_the_largest_cursors_still_read_a_page_on_both_databases(session):
    """The bounds are not too tight: the largest offset and id a cursor may hold are ones SQL takes (an empty page)."""
    assert runs.list_runs(session, project_ids=[1], cursor=paging.encode_offset(paging.MAX_OFFSET), limit=200).data == []
    datasets.list_datasets(session, [1], 100, paging.encode_id(MAX_ID))
    studies.list_studies(session, [1], 200, paging.encode_id(MAX_ID))


def test_every_page_of_a_list_follows_its_cursor():
    assert paging.decode_offset(paging.encode_offset(400)) == 400
    assert paging.decode_offset(None) == paging.decode_offset("") == 0
    assert paging.decode_id(paging.encode_id(17)) == 17


@pytest.mark.parametrize("path, cursors", [("/runs", FORGED_OFFSET_CURSORS), ("/datasets", FORGED_ID_CURSORS),
                                           ("/studies", FORGED_ID_CURSORS)])
def test_a_forged_cursor_is_400_in_the_error_shape(admin, path, cursors):
    for cursor in cursors:
        error = error_of(admin.get(f"{API}{path}", params={"cursor": cursor}), 400, "INVALID_CURSOR")
        assert error["details"] == {"field": "cursor"}, (cursor[:40], error)


@pytest.mark.parametrize("offset", [MAX_ID + 1, 2**63 - 1, 2**64, 10**30])
def test_a_preview_offset_past_any_dataset_is_422_naming_offset(admin, offset):
    dataset = find_bundled_dataset(lambda params: admin.get(f"{API}/datasets", params=params).json())
    error = error_of(admin.get(f"{API}/datasets/{dataset['id']}/preview", params={"offset": offset}), 422,
                     "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == ["offset"], error


def test_a_preview_offset_at_the_bound_is_an_empty_page(admin):
    dataset = find_bundled_dataset(lambda params: admin.get(f"{API}/datasets", params=params).json())
    response = admin.get(f"{API}/datasets/{dataset['id']}/preview", params={"offset": MAX_ID, "limit": 100})
    assert response.status_code == 200, response.text
    assert (response.json()["rows"], response.json()["offset"]) == ([], MAX_ID)


@pytest.mark.parametrize("seed", ["x", 1e300, None, [1], True, 1.5, MAX_ID + 1, -MAX_ID - 2, 2**63])
def test_an_external_run_with_a_seed_past_the_seed_column_is_422_and_not_created(admin, seed):
    name = unique("odd-seed")
    response = admin.post(f"{API}/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True,
                                               "name": name, "params": {"seed": seed}})
    error = error_of(response, 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == ["params.seed"], error
    assert admin.get(f"{API}/runs", params={"q": name}).json()["count"] == 0


@pytest.mark.parametrize("params, seed", [({"seed": MAX_ID}, MAX_ID), ({"seed": -MAX_ID - 1}, -MAX_ID - 1), ({}, 0)])
def test_an_external_runs_seed_is_its_reported_one(admin, params, seed):
    response = admin.post(f"{API}/runs", json={"method": "lora", "model": "tunelab-tiny", "external": True,
                                               "params": params})
    assert response.status_code == 201, response.text
    assert response.json()["seed"] == seed


def test_a_playground_event_id_past_a_redis_stream_id_is_422_naming_it(admin):
    """20 digits spell more than a stream id's 64 bits, which XREAD refused inside a stream already answered 200."""
    events = f"{API}/playground/{'0' * 24}/events"
    too_big = f"{2**64}-0"
    error = error_of(admin.get(events, params={"after": too_big}), 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == ["after"], error
    error = error_of(admin.get(events, headers={"Last-Event-ID": f"0-{2**64}"}), 422, "VALIDATION_ERROR")
    assert [detail["field"] for detail in error["details"]] == ["last-event-id"], error
    # The largest id is one: this request does not exist, which is what the caller is told.
    error_of(admin.get(events, params={"after": f"{2**64 - 1}-{2**64 - 1}"}), 404)
