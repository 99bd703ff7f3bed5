"""`tunelab metrics export --key` finds a key whose CSV cell the server neutralised against spreadsheet formulas."""

import csv
import io

from tests.worker.conftest import TINY_MODEL


def test_metrics_export_filters_on_a_key_that_starts_with_a_formula_trigger(cli, api):
    run = api.post("/runs", json={"method": "lora", "model": TINY_MODEL, "external": True, "name": "cli-csv-keys"})
    assert run.status_code == 201, run.text
    points = [{"key": key, "step": step, "value": -step / 4} for key in ("@key", "train/loss") for step in (1, 2)]
    assert api.post(f"/runs/{run.json()['id']}/metrics", json={"points": points}).status_code == 200

    exported = cli("metrics", "export", str(run.json()["id"]), "--key", "@key", "--csv")

    assert exported.code == 0, exported.stderr
    rows = list(csv.reader(io.StringIO(exported.stdout)))
    assert rows[1:] == [["'@key", "1", "-0.25", rows[1][3]], ["'@key", "2", "-0.5", rows[2][3]]]


def test_an_export_piped_into_head_stops_quietly(cli_env, api):
    """`tunelab metrics export … | head -3` ended in a BrokenPipeError traceback."""
    import subprocess

    from tests.cli.conftest import TUNELAB

    run = api.post("/runs", json={"method": "lora", "model": TINY_MODEL, "external": True, "name": "cli-head"})
    points = [{"key": "train/loss", "step": step, "value": 1 / step} for step in range(1, 5001)]
    assert api.post(f"/runs/{run.json()['id']}/metrics", json={"points": points}).status_code == 200

    export = subprocess.Popen([*TUNELAB, "metrics", "export", str(run.json()["id"]), "--csv"], env=cli_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first_lines = [export.stdout.readline() for _ in range(3)]
    export.stdout.close()  # what head does after its three lines
    stderr = export.stderr.read().decode()
    code = export.wait(timeout=120)

    assert first_lines[0].startswith(b"key,step,value")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == 141
