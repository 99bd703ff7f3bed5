"""login, datasets upload and metrics export through the real `tunelab` command and API."""

import csv
import json
import stat
import subprocess
import sys

from tests.worker.conftest import TINY_MODEL


def test_login_checks_the_token_and_saves_it_0600(cli, cli_env, api_server, admin_token, tmp_path):
    config = tmp_path / "tunelab-config.json"
    shell = {key: value for key, value in cli_env.items() if key not in ("TUNELAB_URL", "TUNELAB_TOKEN")}
    refused = cli("login", "--url", api_server, "--token", "tl_not-a-token", "--json", env=shell)
    assert refused.code == 4 and refused.json()["error"]["code"] in ("INVALID_TOKEN", "AUTH_REQUIRED")
    assert not config.exists(), "a refused token is not saved"
    no_token = cli("runs", "list", env=shell)
    assert no_token.code == 4 and "tunelab login" in no_token.stderr

    config.write_text("{not json")
    broken = cli("runs", "list", env=shell)
    assert broken.code == 2 and "tunelab-config.json is not a Tunelab config file" in broken.stderr
    logged_in = cli("login", "--url", api_server, "--json", input=admin_token + "\n", env=shell)
    assert logged_in.code == 0, logged_in.stdout + logged_in.stderr
    assert logged_in.json()["user"]["email"] == "admin@tunelab.test"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text()) == {"url": api_server, "token": admin_token}
    assert cli("runs", "list", "--json", env=shell).code == 0, "later commands use the saved login"
    # A script logs in from the environment, as --token's help says.
    config.unlink()
    from_env = cli("login", "--url", api_server, "--json", input="", env={**shell, "TUNELAB_TOKEN": admin_token})
    assert from_env.code == 0, from_env.stdout + from_env.stderr
    assert json.loads(config.read_text()) == {"url": api_server, "token": admin_token}

    unreachable = cli("runs", "list", "--url", "http://127.0.0.1:9", "--json", env=shell)
    assert unreachable.code == 5 and unreachable.json()["error"]["code"] == "SERVER_UNREACHABLE"


def test_dataset_upload_prints_line_numbered_errors(cli, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"instruction": "2+2", "output": "4"}\n{"instruction": "3+3"}\nnot json\n')
    refused = cli("datasets", "upload", str(rows), "--name", "cli-broken")
    assert refused.code == 2
    assert "line 2" in refused.stderr and "line 3" in refused.stderr
    as_json = cli("datasets", "upload", str(rows), "--name", "cli-broken", "--json").json()
    assert [error["line"] for error in as_json["error"]["details"]["errors"]] == [2, 3]

    rows.write_text("".join(json.dumps({"instruction": f"{i}+1", "output": str(i + 1)}) + "\n" for i in range(40)))
    uploaded = cli("datasets", "upload", str(rows), "--name", "cli-sums", "--format", "instruction", "--json")
    assert uploaded.code == 0, uploaded.stdout + uploaded.stderr
    assert uploaded.json()["name"] == "cli-sums" and uploaded.json()["row_count"] == 40


def test_metrics_export_returns_every_point(cli, api, tmp_path):
    run = api.post("/runs", json={"method": "lora", "model": TINY_MODEL, "external": True, "name": "cli-export"})
    assert run.status_code == 201, run.text
    run_id = run.json()["id"]
    # Past the 100,000 points a chart read is capped at: the export pages through them all.
    points = [{"key": "train/loss", "step": step, "value": step / 7} for step in range(150_000)]
    points += [{"key": key, "step": step, "value": step / 7} for key in ("train/lr", "eval/loss") for step in range(1500)]
    for start in range(0, len(points), 10_000):
        assert api.post(f"/runs/{run_id}/metrics", json={"points": points[start:start + 10_000]}).status_code == 200

    out = tmp_path / "metrics.csv"
    exported = cli("metrics", "export", str(run_id), "--csv", "-o", str(out))
    assert exported.code == 0, exported.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == len(points)
    assert sorted((row["key"], int(row["step"])) for row in rows) == sorted((p["key"], p["step"]) for p in points)
    only_loss = cli("metrics", "export", str(run_id), "--key", "eval/loss", "--csv")
    assert only_loss.code == 0 and len(only_loss.stdout.splitlines()) == 1 + 1500
    as_json = cli("metrics", "export", str(run_id), "--key", "train/lr", "--json")
    assert len(as_json.json()) == 1500 and {p["key"] for p in as_json.json()} == {"train/lr"}


def test_client_verbs_import_no_torch(cli_env):
    probe = ("import sys\nfrom tunelab.cli import main\ntry:\n    main(['runs', 'list', '--json'])\n"
             "except SystemExit as exit:\n    assert exit.code == 0, exit.code\n"
             "print(sorted(m for m in ('torch', 'transformers', 'sqlalchemy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
