"""`tunelab playground`: the real command against the session's real API, a run trained by the real worker on the
bundled tiny model, and a real inference worker generating its completions."""

import os
import pty
import subprocess
import time
import uuid

import httpx
import pytest

from tests.api.teams_helpers import IDLE_QUEUE, new_email
from tests.cli.conftest import TUNELAB
from tests.conftest import ApiProcess
from tests.slow_proxy import SlowProxy
from tests.worker.conftest import TINY_MODEL, bundled_dataset, launch, wait_finished
from tunelab.commands.playground import terminal_safe
from tunelab.services.evaluation.playground import IN_FLIGHT_RETRY_S

PROMPT = "What is 2 plus 3?"
FEW_TOKENS = ("--max-new-tokens", "6", "--ignore-eos")  # greedy: the same text each time
HELD_S = 120.0  # longer than any test: the proxy lets a held answer go when it closes


@pytest.fixture(scope="module")
def succeeded_run(api_server, auth_headers, worker) -> dict:
    with httpx.Client(base_url=api_server + "/api/v1", timeout=30, headers=auth_headers) as api:
        run = launch(api, "lora", bundled_dataset(api, "tiny-tasks")["id"], max_steps=2, eval_steps=2, max_length=64)
        final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    return final


@pytest.fixture(scope="module")
def inference_worker(start_worker, settings):
    return start_worker(settings.infer_queue)


def at_a_terminal(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run `tunelab` with stdout and stderr on a pseudo-terminal, as in a user's shell: its exit code and what the
    terminal showed."""
    terminal, side = pty.openpty()
    process = subprocess.Popen([*TUNELAB, *args], stdout=side, stderr=side, stdin=subprocess.DEVNULL, env=env)
    os.close(side)
    shown = []
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: the command ended and closed the terminal
            break
        if not chunk:
            break
        shown.append(chunk)
    os.close(terminal)
    return process.wait(timeout=60), b"".join(shown).decode()


def test_a_prompt_prints_the_completion_and_json_gives_the_request_succeeded(cli, cli_env, succeeded_run,
                                                                              inference_worker):
    run_id = str(succeeded_run["id"])
    as_json = cli("playground", run_id, "--prompt", PROMPT, *FEW_TOKENS, "--json")
    assert as_json.code == 0, as_json.stdout + as_json.stderr
    request = as_json.json()
    assert request["status"] == "succeeded" and request["prompt"] == PROMPT and as_json.stderr == ""
    [slot] = request["slots"]
    assert (slot["kind"], slot["run_id"], slot["status"], slot["token_count"]) == ("run", succeeded_run["id"],
                                                                                    "succeeded", 6), slot
    assert slot["text"] and slot["total_s"] > 0

    # Off a terminal (a pipe, a file): the completion alone, once.
    plain = cli("playground", run_id, "--prompt", PROMPT, *FEW_TOKENS)
    assert plain.code == 0, plain.stderr
    assert plain.stdout == slot["text"] + "\n" and plain.stderr == ""

    # At a terminal: the tokens as they come, then the count on their own lines.
    code, shown = at_a_terminal(cli_env, "playground", run_id, "--prompt", PROMPT, *FEW_TOKENS)
    assert code == 0, shown
    assert "waiting for the inference worker" in shown and "6 tokens in " in shown, shown
    assert terminal_safe(slot["text"]).replace("\n", "\r\n") + "\r\n" in shown, shown

    # The base model beside the run, on a dataset row: a completion under each label; --json has the row's answer.
    both = cli("playground", run_id, "--include-base", "--dataset", "tiny-tasks", "--row", "0", *FEW_TOKENS)
    assert both.code == 0, both.stderr
    assert both.stdout.startswith(f"== base: {TINY_MODEL} ==\n"), both.stdout
    assert f"\n== run {run_id}: {succeeded_run['name']} ==\n" in both.stdout, both.stdout
    row = cli("playground", run_id, "--dataset", "tiny-tasks", "--row", "0", *FEW_TOKENS, "--json").json()
    assert row["status"] == "succeeded" and row["expected"] and isinstance(row["prompt"], list), row


def test_a_reward_run_scores_the_runs_completion_and_one_of_your_own(cli, api_server, auth_headers, succeeded_run,
                                                                      inference_worker):
    with httpx.Client(base_url=api_server + "/api/v1", timeout=30, headers=auth_headers) as api:
        reward = launch(api, "lora", bundled_dataset(api, "tiny-preferences")["id"], objective="reward", max_steps=2,
                        eval_steps=2, max_length=64)
        reward = wait_finished(api, reward["id"])
    assert reward["status"] == "succeeded", reward["status_reason"]
    scored = cli("playground", str(succeeded_run["id"]), "--reward-run", str(reward["id"]), "--prompt", PROMPT,
                 "--completion", "5", *FEW_TOKENS, "--json")
    assert scored.code == 0, scored.stdout + scored.stderr
    slots = scored.json()["slots"]
    assert [slot["kind"] for slot in slots] == ["run", "given"]
    assert all(isinstance(slot.get("score"), float) for slot in slots), slots
    plain = cli("playground", "--reward-run", str(reward["id"]), "--prompt", PROMPT, "--completion", "5")
    assert plain.code == 0 and plain.stdout == "5\n", plain.stdout + plain.stderr
    assert "your completion: reward " in plain.stderr
    missing = cli("playground", "--prompt", PROMPT, "--completion", "5")
    assert missing.code == 2 and "--completion: a completion of your own is scored by a reward model" in missing.stderr


def test_a_closed_pipe_ends_the_command_quietly(cli_env, succeeded_run, inference_worker):
    command = subprocess.Popen([*TUNELAB, "playground", str(succeeded_run["id"]), "--prompt", PROMPT, *FEW_TOKENS],
                               env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    command.stdout.close()  # the reader went away before the completion came: `… | head -c 0`
    stderr = command.stderr.read().decode()
    assert command.wait(timeout=600) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_run_with_no_model_to_serve_or_none_at_all_exits_non_zero_saying_why(cli, api):
    queued = api.post("/runs", json={"method": "lora", "model": TINY_MODEL, "queue": IDLE_QUEUE, "params": {},
                                     "dataset": bundled_dataset(api, "tiny-tasks")["id"]})
    assert queued.status_code == 201, queued.text
    refused = cli("playground", str(queued.json()["id"]), "--prompt", PROMPT)
    assert refused.code == 1, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"error RUN_NOT_SUCCEEDED: run_ids: run {queued.json()['id']} "), refused.stderr
    assert "is queued; the playground takes succeeded runs" in refused.stderr and refused.stdout == ""

    external = api.post("/runs", json={"method": "lora", "model": TINY_MODEL, "external": True}).json()
    assert api.post(f"/runs/{external['id']}/finish", json={"status": "succeeded"}).status_code == 200
    no_weights = cli("playground", str(external["id"]), "--prompt", PROMPT, "--json")
    assert no_weights.code == 1, no_weights.stdout
    assert no_weights.json()["error"]["code"] == "RUN_HAS_NO_WEIGHTS"
    assert "saved no adapter or model" in no_weights.json()["error"]["message"]

    missing = cli("playground", "987654321", "--prompt", PROMPT)
    assert missing.code == 3 and missing.stderr.startswith("error RUN_NOT_FOUND: "), missing.stderr

    # A value out of the API's bounds: its 422 names the field, nothing is queued.
    too_few = cli("playground", str(external["id"]), "--prompt", PROMPT, "--max-new-tokens", "0")
    assert too_few.code == 2, too_few.stdout + too_few.stderr
    assert too_few.stderr.startswith("error VALIDATION_ERROR: sampling.max_new_tokens: "), too_few.stderr
    assert "greater than or equal to 1" in too_few.stderr
    unsampled = cli("playground", str(external["id"]), "--prompt", PROMPT, "--temperature", "0.5")
    assert unsampled.code == 2 and "--temperature: takes effect only when sampling" in unsampled.stderr


class HeldStreams(SlowProxy):
    """A proxy that holds every playground stream's answer: a request that seems to wait forever."""

    def _delay_for(self, method: str, path: str, headers: dict[str, str]) -> float:
        return HELD_S if method == "GET" and path.startswith("/api/v1/playground/") else 0.0


def test_only_timeout_limits_the_wait_and_the_read_timeout_holds_for_the_request(cli, api_server, succeeded_run):
    run_id = str(succeeded_run["id"])
    streams = HeldStreams(api_server, "GET", "", [])
    try:
        started = time.monotonic()
        waited = cli("playground", run_id, "--prompt", PROMPT, "--max-new-tokens", "1", "--url", streams.url,
                     "--timeout", "3", "--json")
        took = time.monotonic() - started
    finally:
        streams.close()
    assert waited.code == 6, waited.stdout + waited.stderr
    error = waited.json()["error"]
    assert error["code"] == "PLAYGROUND_TIMEOUT" and error["details"]["timeout_s"] == 3, error
    assert error["message"].startswith("playground request ") and "within --timeout 3 s" in error["message"]
    assert 3 <= took < 60, took

    posts = SlowProxy(api_server, "POST", "/api/v1/playground", [HELD_S])
    try:
        late = cli("playground", run_id, "--prompt", PROMPT, "--max-new-tokens", "1", "--url", posts.url,
                   "--read-timeout", "2")
    finally:
        posts.close()
    assert late.code == 6, late.stdout + late.stderr
    assert "SERVER_TIMEOUT: the server did not answer within 2 s" in late.stderr, late.stderr


def _editor_token(settings, project_id: int) -> str:
    """An API token of a new editor of the project (made in SQL, as an admin's invitation makes the user)."""
    from tunelab.db.models import Role
    from tunelab.db.session import session_scope
    from tunelab.services.accounts import auth, users
    from tunelab.services.accounts.principal import Actor

    with session_scope() as session:
        created = users.create_user(session, settings, Actor(None, "tests"), new_email("cli-playground"), "cli", None,
                                    False, project_id, Role.editor)
        _, token = auth.create_api_token(session, created.user, "tests", None)
    return token


def test_past_the_users_share_the_refusal_says_when_to_try_again(cli, settings, data_dir, succeeded_run):
    token = _editor_token(settings, succeeded_run["project_id"])
    # An API whose inference queue no worker consumes: the user's requests stay in flight.
    queue = f"{settings.infer_queue}-cli-{uuid.uuid4().hex[:6]}"
    server = ApiProcess(data_dir / f"api-{queue}.log", {**os.environ, "TUNELAB_INFER_QUEUE": queue})
    try:
        for _ in range(settings.playground_max_in_flight):
            sent = httpx.post(f"{server.base_url}/api/v1/playground", headers={"Authorization": f"Bearer {token}"},
                              timeout=60, json={"project_id": succeeded_run["project_id"],
                                                "run_ids": [succeeded_run["id"]], "prompt": PROMPT})
            assert sent.status_code == 202, sent.text
        limited = cli("playground", str(succeeded_run["id"]), "--prompt", PROMPT, "--url", server.base_url,
                      "--token", token)
    finally:
        server.stop()
    assert limited.code == 1, limited.stdout + limited.stderr
    [line] = limited.stderr.splitlines()
    assert line.startswith(f"error RATE_LIMITED: you have {settings.playground_max_in_flight} playground requests "
                           "waiting or generating"), line
    assert line.endswith(f"(Retry-After: {IN_FLIGHT_RETRY_S} s)"), line
