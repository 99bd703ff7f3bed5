"""`tunelab pipelines`: the real command against the session's real API. Pipelines here go to a queue no worker
consumes, so nothing trains: the API and worker tests train them (tests/api/test_pipelines_api.py,
tests/e2e/test_pipeline_ui.py)."""

from tests.api.teams_helpers import IDLE_QUEUE
from tests.worker.conftest import TINY_MODEL


def test_launch_from_a_template_show_list_cancel_and_watch(cli, api):
    templates = cli("pipelines", "templates")
    assert templates.code == 0 and "rlhf" in templates.stdout
    assert "3. GRPO: grpo · lora on tiny-tasks (from stage 1, rewarded by stage 2)" in templates.stdout, templates.stdout

    launched = cli("pipelines", "launch", "--template", "rlhf", "--model", TINY_MODEL, "--queue", IDLE_QUEUE,
                   "--name", "cli rlhf", "--param", "1.max_steps=2", "--param", "3.num_generations=2",
                   "--dataset", "2=tiny-preferences", "--json")
    assert launched.code == 0, launched.stderr or launched.stdout
    pipeline = launched.json()
    assert [s["status"] for s in pipeline["stages"]] == ["queued", "waiting", "waiting"]
    assert pipeline["spec"]["stages"][0]["params"] == {"max_steps": 2}, "a flag's text takes the schema's type"
    assert pipeline["spec"]["stages"][2]["params"]["num_generations"] == 2
    assert (pipeline["spec"]["stages"][2]["start_from"], pipeline["spec"]["stages"][2]["reward_from"]) == (1, 2)

    shown = cli("pipelines", "show", str(pipeline["id"]))
    assert shown.code == 0, shown.stderr
    assert "1. SFT (sft · lora) queued run" in shown.stdout and "3. GRPO (grpo · lora) waiting" in shown.stdout
    listed = cli("pipelines", "list", "--json")
    assert pipeline["id"] in [p["id"] for p in listed.json()["data"]]

    canceled = cli("pipelines", "cancel", str(pipeline["id"]), "--json")
    assert canceled.code == 0 and canceled.json()["status"] == "canceled", canceled.stdout
    watched = cli("pipelines", "watch", str(pipeline["id"]), "--json")
    assert watched.code == 2 and watched.json()["stages"][2]["reason"].startswith("pipeline canceled by")
    again = cli("pipelines", "cancel", str(pipeline["id"]), "--json")
    assert again.code == 1 and again.json()["error"]["code"] == "PIPELINE_FINISHED"


def test_a_bad_stage_names_its_flag_or_field_and_creates_nothing(cli, api, tmp_path):
    before = api.get("/pipelines").json()["count"]
    flag = cli("pipelines", "launch", "--template", "rlhf", "--model", TINY_MODEL, "--param", "2.max_length=long")
    assert flag.code == 2 and "--param 2.max_length: must be an integer" in flag.stderr, flag.stderr
    shape = cli("pipelines", "launch", "--template", "rlhf", "--model", TINY_MODEL, "--param", "max_steps=2")
    assert shape.code == 2 and "STAGE.NAME=VALUE with STAGE from 1 to 3" in shape.stderr, shape.stderr
    spec = tmp_path / "pipeline.yaml"
    spec.write_text(f"model: {TINY_MODEL}\nqueue: {IDLE_QUEUE}\nstages:\n"
                    "  - {name: SFT, objective: sft, method: lora, dataset: tiny-tasks}\n"
                    "  - {name: GRPO, objective: grpo, method: lora, dataset: tiny-tasks, start_from: 1, "
                    "reward_from: 1, params: {reward_exact_match: 0}}\n")
    server = cli("pipelines", "launch", "-f", str(spec), "--json")
    assert server.code == 2, server.stdout
    error = server.json()["error"]
    assert error["details"][0]["field"] == "stages.1.reward_from" and "not a reward model" in error["message"]
    spec.write_text(f"model: {TINY_MODEL}\nstages:\n  - {{name: SFT, objective: sft, methd: lora}}\n")
    typo = cli("pipelines", "launch", "-f", str(spec))
    assert typo.code == 2 and "pipeline.yaml: stages[1].methd: unknown key" in typo.stderr, typo.stderr
    assert api.get("/pipelines").json()["count"] == before, "nothing was created"
