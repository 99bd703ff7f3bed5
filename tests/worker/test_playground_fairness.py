"""The inference worker serves waiting users round-robin: one user's backlog does not starve another's. A real
inference worker, started once the backlog waits, serves the requests in the order the service records (the `turn`
of each request's `started` events), and frees each request's place in its user's in-flight count when it ends."""

import os
import uuid

import httpx

from tests.api.teams_helpers import new_email
from tests.conftest import ApiProcess, WorkerProcess, wait_while_progressing
from tests.sse import SseReader
from tests.worker.conftest import launch, wait_finished


def _editor(settings, project_id: int) -> dict[str, str]:
    """A new user, editor of the project, as the headers of an API token of theirs (made in SQL as an admin's
    invitation is: no password to hash on a busy machine)."""
    from tunelab.db.models import Role
    from tunelab.db.session import session_scope
    from tunelab.services.accounts import auth, users
    from tunelab.services.accounts.principal import Actor

    with session_scope() as session:
        created = users.create_user(session, settings, Actor(None, "tests"), new_email("fair"), "fair", None, False,
                                    project_id, Role.editor)
        _, token = auth.create_api_token(session, created.user, "tests", None)
    return {"Authorization": f"Bearer {token}"}


def _turn(base_url: str, request: dict, headers: dict[str, str]) -> int:
    """The request's turn at the inference worker, once its stream has ended."""
    reader = SseReader(base_url + request["events_url"], headers=headers).start()
    wait_while_progressing(lambda: reader, lambda r: r.finished.is_set(), lambda r: len(r.events),
                           message=f"the stream of playground request {request['id']} to end")
    kinds = reader.kinds()
    assert kinds[-1] == "end" and "failed" not in kinds, reader.events
    turns = {data["turn"] for event, _, data in reader.events if event == "started"}
    assert len(turns) == 1, reader.events
    return turns.pop()


def test_a_users_request_is_served_before_the_rest_of_another_users_backlog(
        api, worker, sample_dataset, settings, data_dir):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    alice, bob = (_editor(settings, final["project_id"]) for _ in range(2))

    # A queue of this test's own, so that no inference worker of the session serves the backlog before it is whole.
    queue = f"{settings.infer_queue}-fair-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "TUNELAB_INFER_QUEUE": queue}
    server = ApiProcess(data_dir / f"api-{queue}.log", env)
    inference = None
    try:
        def send(headers: dict[str, str]) -> dict:
            response = httpx.post(f"{server.base_url}/api/v1/playground", headers=headers, timeout=60, json={
                "project_id": final["project_id"], "run_ids": [run["id"]], "include_base": False,
                "prompt": "What is 2 plus 3?", "sampling": {"max_new_tokens": 4, "ignore_eos": True}})
            assert response.status_code == 202, response.text
            return response.json()

        backlog = [send(alice) for _ in range(settings.playground_max_in_flight)]
        newcomer = send(bob)
        inference = WorkerProcess(data_dir / f"worker-{queue}.log", queue, env)
        inference.wait_ready()

        order = sorted([(_turn(server.base_url, request, alice), request["id"]) for request in backlog]
                       + [(_turn(server.base_url, newcomer, bob), newcomer["id"])])
        assert [request_id for _, request_id in order] == [
            backlog[0]["id"], newcomer["id"], *(request["id"] for request in backlog[1:])], order

        # Each ended request left its user's in-flight count: the whole allowance is there again.
        again = [send(alice) for _ in range(settings.playground_max_in_flight)]
        assert len(again) == settings.playground_max_in_flight
    finally:
        if inference is not None:
            inference.stop()
        server.stop()
