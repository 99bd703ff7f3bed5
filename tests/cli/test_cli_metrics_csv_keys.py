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
