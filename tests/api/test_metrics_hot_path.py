"""The metrics ingest hot path: a caller and run seen a moment ago cost no SELECT (the regression guard for the
token, user, run and roles reads each batch once paid), and a revoked token or a lowered role is obeyed at once
though the caller is remembered."""

import sqlite3
import threading

import httpx
from fastapi import Request
from sqlalchemy import event, make_url

from tests.api.teams_helpers import (
    API,
    cancel,
    create_team,
    error_of,
    launch_external,
    log_points,
    stateless_client,
)
from tests.conftest import wait_for
from tunelab.api.deps import get_db
from tunelab.db.session import get_engine
from tunelab.services.accounts import principal_cache

KEYS = ("train/loss", "train/learning_rate", "train/grad_norm")
# Statements of one batch of a remembered caller (on SQLite, the session's database): the flush number with the
# keys' stored last steps (UPDATE run … RETURNING), the chunks' INSERT, and the summaries and rollups upserts.
MOST_STATEMENTS_PER_BATCH = 4


def _batch(first_step: int) -> dict:
    return {"points": [{"key": key, "step": step, "value": 1.0 / (step + 1)}
                       for step in range(first_step, first_step + 100) for key in KEYS]}


def _wait_until_credentials_are_remembered() -> None:
    wait_for(principal_cache.is_hearing, 30, 0.05, "the API hearing the invalidation channel (Redis)")


def test_a_batch_of_a_remembered_caller_reads_nothing_and_takes_a_few_statements(app, client, redis_url):
    _wait_until_credentials_are_remembered()
    http = stateless_client(app)
    team = create_team(app, client, http, "hot-path")
    run_id = launch_external(http, team.editor, team.project_id)["id"]
    for first_step in (0, 100):  # the first batch reads the token, its user, roles and the run; then remembered
        http.post(f"{API}/runs/{run_id}/metrics", json=_batch(first_step), headers=team.editor.headers
                  ).raise_for_status()

    # Ingest runs its statements on the driver (services/metrics.Driver), so SQLite itself reports them: every
    # connection the pool opens from here on is traced, with the thread that ran each statement (the API's own
    # background loops may run theirs meanwhile).
    traced: list[tuple[int, str]] = []
    engine = get_engine()

    def trace(dbapi_connection, _record) -> None:
        dbapi_connection.set_trace_callback(lambda statement: traced.append((threading.get_ident(), statement)))

    engine.dispose()
    event.listen(engine, "connect", trace)
    try:
        response = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(200), headers=team.editor.headers)
    finally:
        event.remove(engine, "connect", trace)
        engine.dispose()

    assert response.status_code == 200 and response.json()["accepted"] == 300
    [batch_thread] = {thread for thread, statement in traced if "metric_seq" in statement}
    statements = [statement for thread, statement in traced if thread == batch_thread]
    reads = [statement for statement in statements if statement.lstrip().upper().startswith("SELECT")]
    assert reads == [], reads
    # An executemany is traced once per row: count the statements apart, by what they write.
    kinds = {statement.split("(")[0].split(" SET ")[0].strip() for statement in statements
             if statement.split()[0].upper() not in ("BEGIN", "COMMIT", "PRAGMA")}
    assert len(kinds) <= MOST_STATEMENTS_PER_BATCH, kinds
    summary = {series["key"]: series["count"] for series in
               http.get(f"{API}/runs/{run_id}/metrics", headers=team.editor.headers).json()["series"]}
    assert summary == dict.fromkeys(KEYS, 300)


def test_a_lowered_role_and_a_revoked_token_stop_ingest_at_once_though_the_caller_is_remembered(app, client,
                                                                                                redis_url):
    _wait_until_credentials_are_remembered()
    http = stateless_client(app)
    team = create_team(app, client, http, "hot-revoke")
    run_id = launch_external(http, team.owner, team.project_id)["id"]
    for _ in range(3):
        log_points(http, team.editor, run_id)
    member_url = f"{API}/projects/{team.project_id}/members/{team.editor.user_id}"

    http.patch(member_url, json={"role": "viewer"}, headers=team.owner.headers).raise_for_status()
    as_viewer = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(0), headers=team.editor.headers)
    http.patch(member_url, json={"role": "editor"}, headers=team.owner.headers).raise_for_status()
    for _ in range(3):
        log_points(http, team.editor, run_id)
    [token] = http.get(f"{API}/auth/tokens", headers=team.editor.headers).json()["data"]
    http.delete(f"{API}/auth/tokens/{token['id']}", headers=team.editor.headers).raise_for_status()
    revoked = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(0), headers=team.editor.headers)

    error_of(as_viewer, 403, "FORBIDDEN")
    error_of(revoked, 401)


def test_a_remembered_run_that_is_deleted_takes_no_more_points_even_when_its_id_is_given_again(app, client,
                                                                                               redis_url):
    _wait_until_credentials_are_remembered()
    http = stateless_client(app)
    team, other = create_team(app, client, http, "hot-deleted"), create_team(app, client, http, "hot-other")
    doomed = launch_external(http, team.owner, team.project_id)["id"]
    for _ in range(3):  # the run's project is remembered by the API now
        log_points(http, team.editor, doomed)
    cancel(http, team.owner, doomed)
    http.delete(f"{API}/runs/{doomed}", headers=team.owner.headers).raise_for_status()
    # SQLite gives the highest id again once its run is deleted; PostgreSQL never does.
    successor = launch_external(http, other.owner, other.project_id)["id"]

    late = http.post(f"{API}/runs/{successor}/metrics", json=_batch(0), headers=team.editor.headers)

    if get_engine().dialect.name == "sqlite":
        assert successor == doomed  # the case this test is for
    error_of(late, 404, "RUN_NOT_FOUND")
    assert http.get(f"{API}/runs/{successor}/metrics", headers=other.owner.headers).json()["series"] == []


def test_a_remembered_callers_batch_skips_the_route_and_is_answered_as_the_route_would(app, client, redis_url):
    """api/ingest_fast_path: once the caller and the run are remembered, a batch opens no request session (FastAPI's
    routing and dependencies cost ~1 ms a request); the answer and what is stored are the route's."""
    _wait_until_credentials_are_remembered()
    http = stateless_client(app)
    team = create_team(app, client, http, "fast-path")
    run_id = launch_external(http, team.editor, team.project_id)["id"]
    sessions_opened = []

    async def counted_db(request: Request):
        sessions_opened.append(request.url.path)
        async for session in get_db(request):
            yield session

    app.dependency_overrides[get_db] = counted_db
    try:
        first = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(0), headers=team.editor.headers)
        through_route = len(sessions_opened)
        second = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(100),
                           headers={**team.editor.headers, "X-Request-ID": "caller-chosen-id"})
        retried = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(100), headers=team.editor.headers)
        fast = len(sessions_opened) - through_route
        bad = http.post(f"{API}/runs/{run_id}/metrics", json={"points": [{"key": "", "step": 0, "value": 1}]},
                        headers=team.editor.headers)
        nul = http.post(f"{API}/runs/{run_id}/metrics", content=b'{"points": [{"key": "lo\\u0000ss", "step": 0, '
                        b'"value": 1}]}', headers={**team.editor.headers, "Content-Type": "application/json"})
        viewer = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(200), headers=team.viewer.headers)
    finally:
        del app.dependency_overrides[get_db]

    assert through_route == 1, "the first batch is the route's: it reads the token, roles and run"
    assert fast == 0, "the remembered caller's batches opened a request session: they went through the route"
    assert first.json() == {"seq": 1, "accepted": 300}
    assert second.status_code == 200 and second.json() == {"seq": 2, "accepted": 300}
    assert second.headers["content-type"] == "application/json"
    assert second.headers["x-request-id"] == "caller-chosen-id"  # the fast path is outside RequestIdMiddleware
    assert retried.json() == {"seq": 3, "accepted": 300}  # idempotent: nothing stored twice
    error_of(bad, 422, "VALIDATION_ERROR")  # worded by the route, as any refusal
    # The fast path is outside InvalidCharactersMiddleware too: a NUL goes on to it and is refused, naming the field.
    assert [detail["field"] for detail in error_of(nul, 422)["details"]] == ["points.0.key"]
    error_of(viewer, 403, "FORBIDDEN")
    summary = {series["key"]: series["count"] for series in
               http.get(f"{API}/runs/{run_id}/metrics", headers=team.editor.headers).json()["series"]}
    assert summary == dict.fromkeys(KEYS, 200)


def test_a_small_batch_written_on_the_event_loop_never_makes_it_wait_for_another_writer(app, client, redis_url):
    """A remembered caller's small batch on SQLite is written on the event loop (db/loop_connections.LoopSqlite),
    but only when nobody else writes: while another process holds the write lock, the batch waits on a thread and
    the API goes on answering."""
    _wait_until_credentials_are_remembered()
    http = stateless_client(app)
    team = create_team(app, client, http, "loop-writes")
    run_id = launch_external(http, team.editor, team.project_id)["id"]

    def log(step: int) -> httpx.Response:
        return http.post(f"{API}/runs/{run_id}/metrics", headers=team.editor.headers,
                         json={"points": [{"key": "train/loss", "step": step, "value": 1.0}]})

    assert [log(step).json()["seq"] for step in range(3)] == [1, 2, 3]  # the first through the route
    on_the_loop = app.state.loop_sqlite.commits
    large = http.post(f"{API}/runs/{run_id}/metrics", json=_batch(10_000), headers=team.editor.headers)
    assert large.status_code == 200
    assert app.state.loop_sqlite.commits == on_the_loop, "a large batch is written on a thread"
    other_writer = sqlite3.connect(make_url(get_engine().url).database, isolation_level=None)
    waiting: list[httpx.Response] = []
    try:
        other_writer.execute("BEGIN IMMEDIATE")
        blocked = threading.Thread(target=lambda: waiting.append(log(3)))
        blocked.start()
        answered_meanwhile = http.get(f"{API}/runs/{run_id}", headers=team.editor.headers)
        assert not waiting, "the batch did not wait for the other writer"
        assert answered_meanwhile.status_code == 200
    finally:
        other_writer.rollback()
        other_writer.close()
    blocked.join(timeout=60)

    assert waiting[0].json() == {"seq": 5, "accepted": 1}
    assert log(4).json()["seq"] == 6
    assert app.state.loop_sqlite.commits == on_the_loop + 1, "a small batch is written on the loop when it can be"
    series = http.get(f"{API}/runs/{run_id}/metrics", params={"keys": "train/loss", "after_step": -1},
                      headers=team.editor.headers).json()["series"]
    assert series[0]["step"][:5] == [0, 1, 2, 3, 4]
