"""Every CSV the server writes is safe to open in a spreadsheet (OWASP's rule against CSV injection): a text cell that
starts with =, +, -, @, tab or carriage return is read back with a single quote before it, and the numbers the
server writes (a negative loss) are still numbers."""

import csv
import io

from tests.api.teams_helpers import API, Team, team_fixture, unique
from tunelab.core.csv_cells import FORMULA_TRIGGERS

team = team_fixture("csv")

FORMULA_NAME = '=HYPERLINK("http://x","y")'


def _as_a_spreadsheet_reads(text: str) -> list[list[str]]:
    """The cells a spreadsheet would see: CSV quoting undone, nothing else."""
    return list(csv.reader(io.StringIO(text, newline="")))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _assert_no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_TRIGGERS) or _is_number(cell), (cell, row)


def _external_run(http, team: Team, name: str, params: dict) -> int:
    body = {"method": "lora", "model": "tunelab-tiny", "external": True, "project_id": team.project_id, "name": name,
            "params": params}
    response = http.post(f"{API}/runs", json=body, headers=team.editor.headers)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_the_runs_and_metrics_csv_neutralise_formulas_and_keep_numbers(http, team):
    tag = unique("+1")[:50]
    run_id = _external_run(http, team, FORMULA_NAME, {"r": "@SUM(A1:A9)", "learning_rate": -0.5,
                                                      "lora_alpha": "\t=1+1", "lora_dropout": "\r-2"})
    tagged = http.patch(f"{API}/runs/{run_id}", json={"tags": [tag]}, headers=team.editor.headers)
    assert tagged.status_code == 200, tagged.text
    points = [{"key": "@key", "step": 1, "value": -0.5}, {"key": "-loss", "step": 2, "value": -1e-7},
              {"key": "train/loss", "step": 3, "value": 2.5}]
    assert http.post(f"{API}/runs/{run_id}/metrics", json={"points": points},
                     headers=team.editor.headers).status_code == 200

    table = http.get(f"{API}/runs/export", params={"project_id": team.project_id, "ids": [run_id]},
                     headers=team.viewer.headers)
    assert table.status_code == 200, table.text
    header, *rows = _as_a_spreadsheet_reads(table.text)
    _assert_no_formula([header, *rows])
    [row] = [dict(zip(header, row, strict=True)) for row in rows]
    assert (row["name"], row["tags"], row["params.r"], row["params.lora_alpha"], row["params.lora_dropout"]) == (
        "'" + FORMULA_NAME, "'" + tag, "'@SUM(A1:A9)", "'\t=1+1", "'\r-2")
    assert float(row["params.learning_rate"]) == -0.5, "a number stays a number"

    history = http.get(f"{API}/runs/{run_id}/metrics/export", headers=team.viewer.headers)
    assert history.status_code == 200, history.text
    header, *rows = _as_a_spreadsheet_reads(history.text)
    _assert_no_formula([header, *rows])
    assert sorted((key, int(step), float(value)) for key, step, value, _ in rows) == [
        ("'-loss", 2, -1e-7), ("'@key", 1, -0.5), ("train/loss", 3, 2.5)]

    # The JSON exports are data, not a sheet: they keep every value as it was sent.
    as_json = http.get(f"{API}/runs/{run_id}/metrics/export", params={"format": "json"}, headers=team.viewer.headers)
    assert sorted(point["key"] for point in as_json.json()) == ["-loss", "@key", "train/loss"]
