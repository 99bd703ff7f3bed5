"""The real `tunelab` command against the session's real API and Celery worker, on the bundled tiny model."""

import uuid

from tests.api.teams_helpers import IDLE_QUEUE
from tests.worker.conftest import TINY_MODEL

QUICK = ("--param", "max_steps=3", "--param", "eval_steps=3", "--param", "max_length=64")


def test_launch_and_watch_exit_with_the_runs_outcome(cli, api, worker, tmp_path):
    launched = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks",
                   "--param", "r=4", *QUICK, "--name", "cli-ok", "--json")
    assert launched.code == 0, launched.stderr
    good = launched.json()
    assert good["name"] == "cli-ok" and good["config"]["params"]["r"] == 4

    # bf16 passes validation off the "cpu" queue and fails in training on this CPU worker: a deterministic failure.
    run_file = tmp_path / "run.yaml"
    run_file.write_text(f"method: lora\nmodel: {TINY_MODEL}\ndataset: tiny-tasks\nname: cli-fails\n"
                        "params:\n  max_steps: 3\n  precision: bf16\n")
    failing = cli("runs", "launch", "--file", str(run_file), "--json")
    assert failing.code == 0, failing.stderr
    bad = failing.json()
    assert bad["config"]["params"]["precision"] == "bf16"

    # Not at a terminal (a CI log): a plain line each time the progress changes, not 4 minutes of silence.
    followed = cli("runs", "watch", str(good["id"]))
    assert followed.code == 0, followed.stdout + followed.stderr
    lines = followed.stderr.splitlines()
    assert lines and all(line.startswith(f"run {good['id']} ") for line in lines), followed.stderr
    assert lines[-1].startswith(f"run {good['id']} succeeded: step 3 of 3"), followed.stderr
    assert len(set(lines)) == len(lines)  # a line per change, never the same twice
    watched = cli("runs", "watch", str(good["id"]), "--json")
    assert watched.code == 0, watched.stdout + watched.stderr
    assert watched.json()["status"] == "succeeded" and watched.stderr == ""
    finished = cli("runs", "watch", str(good["id"]))
    assert finished.code == 0 and "succeeded" in finished.stdout and "train/loss" in finished.stdout, finished.stdout
    watched_bad = cli("runs", "watch", str(bad["id"]))
    assert watched_bad.code == 1, watched_bad.stdout + watched_bad.stderr
    assert "failed" in watched_bad.stdout and "needs a CUDA GPU" in watched_bad.stdout

    listed = cli("runs", "list", "--status", "succeeded", "--json", "--limit", "200")
    assert listed.code == 0 and good["id"] in [run["id"] for run in listed.json()["data"]]
    assert bad["id"] not in [run["id"] for run in listed.json()["data"]]
    table = cli("runs", "list")
    assert table.code == 0 and "cli-ok" in table.stdout and "cli-fails" in table.stdout
    shown = cli("runs", "show", str(good["id"]))
    assert shown.code == 0 and "succeeded" in shown.stdout and "lora_alpha" in shown.stdout
    logs = cli("runs", "logs", str(bad["id"]), "-f", "--json")
    assert logs.code == 0 and "Traceback" in logs.json()["text"]


def test_a_canceled_run_watches_to_exit_2_and_a_clone_is_queued(cli, api, worker):
    queue = IDLE_QUEUE  # no worker consumes it: the run stays queued until canceled
    run = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks", "--queue",
              queue, *QUICK, "--name", "[b]not markup[/b]", "--json").json()
    shown = cli("runs", "show", str(run["id"]))
    assert shown.code == 0 and "[b]not markup[/b]" in shown.stdout, shown.stdout
    clone = cli("runs", "clone", str(run["id"]), "--param", "r=2", "--json")
    assert clone.code == 0, clone.stdout
    assert clone.json()["config"]["params"]["r"] == 2 and clone.json()["status"] == "queued"
    for run_id in (run["id"], clone.json()["id"]):
        canceled = cli("runs", "cancel", str(run_id), "--json")
        assert canceled.code == 0 and canceled.json()["status"] == "canceled", canceled.stdout
    watched = cli("runs", "watch", str(run["id"]), "--json")
    assert watched.code == 2 and watched.json()["status"] == "canceled"
    again = cli("runs", "cancel", str(run["id"]), "--json")
    assert again.code == 1 and again.json()["error"]["code"]
    tag = f"cli-{uuid.uuid4().hex[:6]}"
    assert api.patch(f"/runs/{run['id']}", json={"tags": [tag]}).status_code == 200
    tagged = cli("runs", "list", "--project", "default", "--tag", tag, "--status", "canceled", "--json")
    assert tagged.code == 0 and [r["id"] for r in tagged.json()["data"]] == [run["id"]]
    no_project = cli("runs", "list", "--project", "no-such-project", "--json")
    assert no_project.code == 3 and no_project.json()["error"]["code"] == "PROJECT_NOT_FOUND"
    missing = cli("runs", "show", "987654321", "--json")
    assert missing.code == 3 and missing.json()["error"]["code"] == "RUN_NOT_FOUND"


def test_launch_with_a_bad_param_names_it_and_creates_no_run(cli, api, tmp_path):
    before = api.get("/runs", params={"limit": 1}).json()["count"]
    flag = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks",
               "--param", "r=eight")
    assert flag.code == 2
    assert "--param r: must be an integer" in flag.stderr
    unknown = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks",
                  "--param", "lora_r=8", "--json")
    assert unknown.code == 2 and unknown.json()["error"]["details"] == {"field": "--param lora_r"}
    assert "did you mean r," in unknown.json()["error"]["message"]
    run_file = tmp_path / "run.json"
    run_file.write_text('{"method": "lora", "model": "%s", "dataset": "tiny-tasks", '
                        '"params": {"learning_rate": 5}}' % TINY_MODEL)
    in_file = cli("runs", "launch", "-f", str(run_file))
    assert in_file.code == 2 and "run.json: params.learning_rate: must be ≤ 1.0 (got 5)" in in_file.stderr
    run_file.write_text('{"method": "lora", "modle": "x"}')
    typo = cli("runs", "launch", "-f", str(run_file))
    assert typo.code == 2 and "run.json: modle: unknown key" in typo.stderr
    not_an_id = cli("runs", "watch", "twelve", "--json")
    assert not_an_id.code == 2 and "run_id" in not_an_id.json()["error"]["message"]
    assert api.get("/runs", params={"limit": 1}).json()["count"] == before, "nothing was posted"


def test_a_runs_weights_come_out_through_the_cli_and_a_canceled_run_resumes(cli, api, worker, tmp_path):
    """What the run page's buttons do had no verb: download the adapter, export and download a merged model, resume a
    canceled run, list the datasets a launch can name."""
    import zipfile

    datasets = cli("datasets", "list", "--json")
    assert datasets.code == 0 and "tiny-tasks" in [d["name"] for d in datasets.json()["data"]]
    assert "tiny-tasks" in cli("datasets", "list").stdout

    run = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks", *QUICK,
              "--name", "cli-weights", "--json").json()
    missing = cli("runs", "download", str(run["id"]), "--folder", "merged", "-o", str(tmp_path / "early.zip"))
    assert missing.code == 3 and not (tmp_path / "early.zip").exists()
    assert cli("runs", "watch", str(run["id"]), "--json").code == 0

    adapter = cli("runs", "download", str(run["id"]), "-o", str(tmp_path / "adapter.zip"), "--json")
    assert adapter.code == 0, adapter.stdout + adapter.stderr
    assert adapter.json()["folder"] == "adapter" and adapter.json()["size_bytes"] == (tmp_path / "adapter.zip").stat().st_size
    assert "adapter_config.json" in zipfile.ZipFile(tmp_path / "adapter.zip").namelist()
    again = cli("runs", "download", str(run["id"]), "-o", str(tmp_path / "adapter.zip"))
    assert again.code == 2 and "--force" in again.stderr

    merged = cli("runs", "export-merged", str(run["id"]))
    assert merged.code == 0 and "merged model ready" in merged.stdout, merged.stdout + merged.stderr
    saved = cli("runs", "download", str(run["id"]), "--folder", "merged", "-o", str(tmp_path / "merged.zip"))
    assert saved.code == 0, saved.stderr
    assert "config.json" in zipfile.ZipFile(tmp_path / "merged.zip").namelist()

    parked = cli("runs", "launch", "--method", "lora", "--model", TINY_MODEL, "--dataset", "tiny-tasks", "--queue",
                 IDLE_QUEUE, *QUICK, "--json").json()
    assert cli("runs", "cancel", str(parked["id"])).code == 0
    resumed = cli("runs", "resume", str(parked["id"]), "--json")
    assert resumed.code == 0 and resumed.json()["status"] == "queued", resumed.stdout
    assert cli("runs", "cancel", str(parked["id"])).code == 0
