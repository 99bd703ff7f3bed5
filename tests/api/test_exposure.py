"""What viewers and share links are told, and what an external run or an upload may put in front of them: a run's
config names its model and dataset, never a server path; a link's holder learns the project and the title, not the
creator's email; external-run params are bounded; multipart fields are UTF-8 or refused."""

import json
import uuid

import pytest
from sqlalchemy import func, select

from tests.api.teams_helpers import (
    API,
    Team,
    create_share,
    error_of,
    launch_queued,
    share_header,
    team_fixture,
    unique,
    upload_dataset,
)
from tests.conftest import find_bundled_dataset
from tunelab.db.models import Dataset, Run
from tunelab.db.session import session_scope
from tunelab.services.catalog.models import model_identity, resolve_model_path
from tunelab.services.runs import lifecycle
from tunelab.services.runs.external_runs import (
    MAX_PARAM_DEPTH,
    MAX_PARAM_KEY_CHARS,
    MAX_PARAM_VALUE_CHARS,
    MAX_PARAMS,
    MAX_PARAMS_CHARS,
)

team = team_fixture("exposure")


def _server_paths(settings) -> list[str]:
    return [str(settings.models_dir), str(settings.artifact_dir), str(settings.data_dir), "model_path"]


def _assert_no_server_path(text: str, settings) -> None:
    for path in _server_paths(settings):
        assert path not in text, f"{path!r} in {text[:2000]}"


@pytest.fixture(scope="module")
def started_run(team, http, settings) -> dict:
    """A queued run of the team's dataset whose start the worker has recorded (the base's identity, with its path)."""
    dataset = upload_dataset(http, team.owner, team.project_id)
    run = launch_queued(http, team.editor, team.project_id, dataset["id"])
    with session_scope() as session:
        lifecycle.record_start(session, run["id"], {"torch": "test"},
                               model_identity(resolve_model_path(settings, "tunelab-tiny")))
    return {"run": run, "dataset": dataset}


def test_viewers_share_links_and_editors_see_the_model_and_dataset_by_name_not_by_server_path(http, team, settings,
                                                                                             started_run):
    run_id, dataset = started_run["run"]["id"], started_run["dataset"]
    link = create_share(http, team.editor, [run_id])
    readers = {"viewer": team.viewer.headers, "editor": team.editor.headers, "share": share_header(link["token"])}
    for who, headers in readers.items():
        for response in (http.get(f"{API}/runs/{run_id}", headers=headers),
                         http.get(f"{API}/runs", params={"project_id": team.project_id}, headers=headers)):
            assert response.status_code == 200, (who, response.text)
            _assert_no_server_path(response.text, settings)
        config = http.get(f"{API}/runs/{run_id}", headers=headers).json()["config"]
        assert config["model"] == "tunelab-tiny", who
        assert config["dataset"]["name"] == dataset["name"] and config["dataset"]["id"] == dataset["id"], who
        assert len(config["model_identity"]["files_digest"]) == 64, who  # what identifies the weights stays
        assert config["params"]["seed"] is not None, who


@pytest.fixture(scope="module")
def sample_id(admin) -> int:
    return find_bundled_dataset(lambda params: admin.get(f"{API}/datasets", params=params).json())["id"]


def test_a_link_holder_learns_the_project_and_title_but_not_the_creators_email(http, team, started_run, sample_id):
    link = create_share(http, team.editor, [started_run["run"]["id"]], title="Our best adapter")
    opened = http.get(f"{API}/shared/{link['token']}")
    assert opened.status_code == 200, opened.text
    assert opened.json()["project_name"] == team.name and opened.json()["title"] == "Our best adapter"
    assert team.editor.email not in opened.text and "shared_by" not in opened.json()
    # The project's members still see who made it.
    listed = http.get(f"{API}/projects/{team.project_id}/shares", headers=team.owner.headers).json()["data"]
    assert {s["created_by"] for s in listed if s["id"] == link["id"]} == {team.editor.email}

    study = http.post(f"{API}/studies", headers=team.editor.headers, json={
        "project_id": team.project_id, "name": unique("study"), "model": "tunelab-tiny", "dataset_id": sample_id,
        "methods": ["lora"], "seeds": [1], "budget": {"max_steps": 2}, "params": {"max_length": 64},
        "queue": started_run["run"]["queue"]})
    assert study.status_code == 201, study.text
    study_id = study.json()["study"]["id"]
    study_link = http.post(f"{API}/studies/{study_id}/shares", json={}, headers=team.editor.headers).json()
    seen = http.get(f"{API}/studies/{study_id}", headers=share_header(study_link["token"]))
    assert seen.status_code == 200 and seen.json()["study"]["created_by"] is None, seen.text
    assert team.editor.email not in seen.text
    member_view = http.get(f"{API}/studies/{study_id}", headers=team.viewer.headers).json()
    assert member_view["study"]["created_by"] == team.editor.email


# External-run params ---------------------------------------------------------------------------------------------

def _runs_in(team: Team) -> int:
    with session_scope() as session:
        return session.scalar(select(func.count(Run.id)).where(Run.project_id == team.project_id)) or 0


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"level": value}
    return value


@pytest.mark.parametrize(("params", "field", "message"), [
    ({"lr": 1e-4, "prompt": "x" * (MAX_PARAM_VALUE_CHARS + 1)}, "params.prompt",
     f"at most {MAX_PARAM_VALUE_CHARS} characters"),
    ({"layers": list(range(2_000))}, "params.layers", f"at most {MAX_PARAM_VALUE_CHARS} characters as JSON"),
    ({"k" * (MAX_PARAM_KEY_CHARS + 1): 1}, f"params.{'k' * 40}…", f"at most {MAX_PARAM_KEY_CHARS} characters"),
    ({"fsdp": {"k" * (MAX_PARAM_KEY_CHARS + 1): 1}}, f"params.fsdp.{'k' * 40}…",
     f"at most {MAX_PARAM_KEY_CHARS} characters"),
    ({"deep": _nested(MAX_PARAM_DEPTH + 1)}, "params.deep" + ".level" * MAX_PARAM_DEPTH,
     f"nested at most {MAX_PARAM_DEPTH} levels deep"),
    ({"deep": [[[[[[1]]]]]]}, "params.deep" + ".0" * MAX_PARAM_DEPTH, f"nested at most {MAX_PARAM_DEPTH} levels"),
    ({f"p{i}": i for i in range(MAX_PARAMS + 1)}, "params", f"at most {MAX_PARAMS} params"),
    ({f"p{i}": "x" * MAX_PARAM_VALUE_CHARS for i in range(MAX_PARAMS_CHARS // MAX_PARAM_VALUE_CHARS + 1)},
     "params", f"at most {MAX_PARAMS_CHARS} characters in all"),
])
def test_external_params_past_a_limit_are_a_422_naming_the_param_and_create_nothing(http, team, params, field,
                                                                                   message):
    before = _runs_in(team)
    body = {"external": True, "method": "custom", "model": "my-org/model", "project_id": team.project_id,
            "params": params}
    error = error_of(http.post(f"{API}/runs", json=body, headers=team.editor.headers), 422, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == field and message in error["details"][0]["message"], error
    assert error["message"].startswith(f"{field}: ") and len(error["message"]) < 400
    assert _runs_in(team) == before


def test_external_params_at_the_limits_are_kept_as_sent(http, team):
    params = {"prompt": "x" * MAX_PARAM_VALUE_CHARS, "k" * MAX_PARAM_KEY_CHARS: 1,
              "deep": _nested(MAX_PARAM_DEPTH), **{f"arg{i}": i / 7 for i in range(150)},
              "lora_target_modules": ["q_proj", "v_proj"], "fsdp_config": {"min_num_params": 0, "xla": False}}
    body = {"external": True, "method": "custom", "model": "my-org/model", "project_id": team.project_id,
            "params": params}
    created = http.post(f"{API}/runs", json=body, headers=team.editor.headers)
    assert created.status_code == 201, created.text
    assert created.json()["config"]["params"] == params


# Multipart fields ------------------------------------------------------------------------------------------------

BOUNDARY = "tunelab-utf8"


def _multipart(fields: list[tuple[bytes, bytes]], filename: bytes, content: bytes) -> bytes:
    parts = [b"--" + BOUNDARY.encode() + b'\r\nContent-Disposition: form-data; name="' + name + b'"\r\n\r\n' + value
             + b"\r\n" for name, value in fields]
    parts.append(b"--" + BOUNDARY.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="' + filename
                 + b'"\r\nContent-Type: application/jsonl\r\n\r\n' + content + b"\r\n")
    return b"".join(parts) + b"--" + BOUNDARY.encode() + b"--\r\n"


def _upload(http, team: Team, fields: list[tuple[bytes, bytes]], filename: bytes = b"rows.jsonl"):
    content = (json.dumps({"instruction": f"Echo {uuid.uuid4().hex}.", "input": "a", "output": "a"}) + "\n").encode()
    body = _multipart([(b"project_id", str(team.project_id).encode()), *fields], filename, content)
    return http.post(f"{API}/datasets", content=body, headers={
        **team.editor.headers, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})


def _datasets_in(team: Team) -> int:
    with session_scope() as session:
        return session.scalar(select(func.count(Dataset.id)).where(Dataset.project_id == team.project_id)) or 0


@pytest.mark.parametrize(("fields", "filename", "field"), [
    ([(b"name", b"caf\xe9 rows")], b"rows.jsonl", "name"),  # Latin-1, not UTF-8
    ([(b"name", b"rows"), (b"format", b"instruction\xff")], b"rows.jsonl", "format"),
    ([(b"name", b"rows")], b"r\xc3\x28ows.jsonl", "file"),  # a broken two-byte sequence in the file name
])
def test_a_multipart_field_that_is_not_utf8_is_a_422_naming_it_and_nothing_is_stored(http, team, fields, filename,
                                                                                     field):
    before = _datasets_in(team)
    error = error_of(_upload(http, team, fields, filename), 422, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == field and "UTF-8" in error["message"], error
    assert _datasets_in(team) == before


def test_a_utf8_name_and_file_name_are_stored_as_sent(http, team):
    name = f"Données réelles ✓ {uuid.uuid4().hex[:6]}"
    created = _upload(http, team, [(b"name", name.encode())], filename="lignes-été.jsonl".encode())
    assert created.status_code == 201, created.text
    assert created.json()["name"] == name
