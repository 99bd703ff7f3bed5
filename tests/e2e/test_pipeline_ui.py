"""A pipeline in Chromium: the RLHF template launched from the form (a stage's out-of-bounds param refused at that
stage, nothing created), trained by the real worker stage after stage (SFT → reward model → GRPO rewarded by it), its
page following the chain live to the reward model's accuracy and the GRPO stage's reward curve; the list compares
the final stages, and a share link opens the page read-only without cookies. The GRPO stage's run page lists the
completions it sampled with the reward model's score of each; the reward stage's playground scores a completion of
your own, and the SFT stage's playground has its completions scored by that reward run."""

import re
from datetime import datetime

from playwright.sync_api import expect

from tests.conftest import wait_while_progressing
from tests.e2e.conftest import close_page, open_page, wait_for_points
from tests.worker.conftest import FINISHED, run_progress

SFT, REWARD, GRPO = "Stage 1 · SFT", "Stage 2 · Reward model", "Stage 3 · GRPO"
# Each stage's params as the form labels them (the registry's titles), small enough to train in seconds on a CPU.
STAGE_PARAMS = {
    SFT: {"Max steps": 2, "Eval every (steps)": 2, "Generation eval rows": 0},
    REWARD: {"Max steps": 4, "Eval every (steps)": 4, "Max length (tokens)": 64},
    GRPO: {"Max steps": 2, "Eval split": 0, "Batch size per device": 4, "Group size": 4, "Max completion length": 6,
           "Generation eval rows": 0},
}
GRPO_STEPS = STAGE_PARAMS[GRPO]["Max steps"]
# A playground column's score, as the reward run's `score` event shows it.
SCORED = re.compile(r"Reward -?\d+\.\d{3}")


def _stage_progress(detail: dict) -> tuple:
    """What changes while a pipeline gets anywhere: each stage's status and its run's progress."""
    return tuple((stage["status"], run_progress(stage["run"]) if stage["run"] else None) for stage in detail["stages"])


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _wait_for_score(panel, label: str, message: str) -> None:
    """Until the playground column named `label` shows its reward score; fails at once when a column fails or is not
    scored, and otherwise only when no column has changed for the stall period (a model loading on a busy machine is
    slow, not stuck). Read without waiting (evaluate_all), as wait_for_completions reads the columns."""
    def read() -> dict[str, str]:
        return dict(panel.get_by_role("region").evaluate_all(
            "columns => columns.map(c => [c.querySelector('h3')?.innerText ?? '', c.innerText])"))

    def scored(columns: dict[str, str]) -> bool:
        failed = [line for text in columns.values() for line in text.split("\n")
                  if line.startswith(("Failed:", "Not scored:"))]
        assert not failed, f"a playground column failed: {failed}"
        return SCORED.search(columns.get(label, "")) is not None

    wait_while_progressing(read, scored, lambda columns: tuple(columns.items()), message=message)
    expect(panel.get_by_role("region", name=label, exact=True)).to_contain_text(SCORED)


def test_an_rlhf_pipeline_from_the_form_trains_stage_after_stage(page, api, api_server, browser, worker, start_worker,
                                                                 settings):
    pipelines_before = api.get("/pipelines").json()["count"]
    page.goto("/")
    page.get_by_role("navigation").get_by_role("link", name="Pipelines", exact=True).click()
    page.get_by_role("link", name="New pipeline", exact=True).click()
    page.get_by_role("radio", name=re.compile(r"^RLHF")).check()
    page.get_by_label("Pipeline name", exact=True).fill("rlhf e2e")
    expect(page.get_by_label("Base model", exact=True)).to_have_value("tunelab-tiny")
    stages = {label: page.get_by_role("group", name=label, exact=True) for label in (SFT, REWARD, GRPO)}
    # Each stage says what it starts from; the datasets are the template's suggestions, in the stage's formats.
    expect(stages[REWARD]).to_contain_text("starts from stage 1's weights (SFT)")
    expect(stages[GRPO]).to_contain_text("starts from stage 1's weights (SFT), rewarded by stage 2's model")
    expect(stages[REWARD].get_by_label("Dataset", exact=True).locator("option:checked")).to_contain_text(
        "tiny-preferences")
    expect(stages[SFT].get_by_label("Dataset", exact=True).locator("option:checked")).to_contain_text("tiny-tasks")
    for label, params in STAGE_PARAMS.items():
        for field, value in params.items():
            stages[label].get_by_label(field, exact=True).fill(str(value))

    # An out-of-bounds param of the second stage: the API's 422 shows at that stage's field, and nothing is made.
    eval_split = stages[REWARD].get_by_label("Eval split", exact=True)
    kept_split = eval_split.input_value()
    eval_split.fill("5")
    launch = page.get_by_role("button", name=re.compile(r"^Launch pipeline"))
    with page.expect_response(lambda r: r.url.endswith("/api/v1/pipelines") and r.request.method == "POST") as refused:
        launch.click()
    assert refused.value.status == 422, refused.value.text()
    expect(eval_split).to_have_attribute("aria-invalid", "true")
    expect(eval_split).to_have_accessible_description(re.compile(r"\S"))
    expect(page.get_by_role("alert").filter(has_text="Stage 2 · Reward model: Eval split")).to_be_visible()
    assert stages[SFT].locator("[aria-invalid=true]").count() == 0
    assert stages[GRPO].locator("[aria-invalid=true]").count() == 0
    assert api.get("/pipelines").json()["count"] == pipelines_before, "a refused pipeline creates nothing"
    assert "/pipelines/new" in page.url

    eval_split.fill(kept_split)
    launch.click()
    page.wait_for_url(re.compile(r"/pipelines/\d+$"))
    pipeline_id = int(page.url.rsplit("/", 1)[1])
    expect(page.get_by_role("heading", name="rlhf e2e", level=1)).to_be_visible()

    def all_succeeded(detail: dict) -> bool:
        ended = [(s["name"], s["status"], s["reason"]) for s in detail["stages"]
                 if s["status"] in FINISHED - {"succeeded"} or s["status"] == "deleted"]
        assert not ended, f"a stage did not succeed: {ended}"
        return all(stage["status"] == "succeeded" for stage in detail["stages"])

    detail = wait_while_progressing(lambda: api.get(f"/pipelines/{pipeline_id}").json(), all_succeeded,
                                    _stage_progress, message="the pipeline's three stages to succeed")
    assert detail["status"] == "succeeded"
    runs = [stage["run"] for stage in detail["stages"]]
    # Stage after stage: each run was created, and started, after the one before it finished.
    assert [run["id"] for run in runs] == sorted(run["id"] for run in runs)
    for before, after in zip(runs, runs[1:]):
        assert _when(after["started_at"]) >= _when(before["finished_at"]), (before, after)
    assert runs[1]["base_run_id"] == runs[0]["id"] and runs[2]["base_run_id"] == runs[0]["id"]
    assert runs[2]["config"]["params"]["reward_model_run"] == runs[1]["id"]
    assert detail["final_run_id"] == runs[2]["id"]

    # The page followed the chain on its own: every stage succeeded, the reward model's accuracy, the reward curve.
    chain = page.get_by_role("list", name="Stages", exact=True)
    expect(chain.get_by_text("succeeded", exact=True)).to_have_count(3)
    reward_card = chain.get_by_role("article", name=REWARD, exact=True)
    expect(reward_card).to_contain_text(re.compile(r"Reward accuracy\s*\d+(\.\d)? %"))
    grpo_card = chain.get_by_role("article", name=GRPO, exact=True)
    expect(grpo_card.get_by_role("region", name="Reward of stage 3", exact=True)).to_be_visible()
    wait_for_points(page, "train/reward", lambda n: n == GRPO_STEPS, "the GRPO stage's reward curve")
    expect(grpo_card.get_by_role("link", name=re.compile(rf"^Run #{runs[2]['id']} "))).to_be_visible()
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_have_count(0)  # nothing left to cancel

    # A read-only link to the page, opened without cookies.
    page.get_by_role("button", name="Share", exact=True).click()
    dialog = page.get_by_role("dialog", name="Share this pipeline")
    with page.expect_response(lambda r: r.url.endswith(f"/api/v1/pipelines/{pipeline_id}/shares")
                              and r.request.method == "POST") as made:
        dialog.get_by_role("button", name="Create link").click()
    assert made.value.status == 201, made.value.text()
    url = dialog.get_by_role("textbox", name="Share link").input_value()
    dialog.get_by_role("button", name="Close").click()
    shared = open_page(browser, api_server)
    try:
        shared.goto(url)
        expect(shared.get_by_role("heading", name="rlhf e2e", exact=True, level=1)).to_be_visible()
        shared_chain = shared.get_by_role("list", name="Stages", exact=True)
        expect(shared_chain.get_by_text("succeeded", exact=True)).to_have_count(3)
        wait_for_points(shared, "train/reward", lambda n: n == GRPO_STEPS, "the shared page's reward curve")
        for action in ("Cancel", "Clone", "Share", "Delete"):
            assert shared.get_by_role("button", name=action).count() == 0, f"a shared pipeline is read-only: {action}"
        assert shared_chain.get_by_role("link").count() == 0, "no links into the app"
    finally:
        close_page(shared, "shared-pipeline")

    # The list compares the final stages of the pipelines picked.
    page.get_by_role("navigation").get_by_role("link", name="Pipelines", exact=True).click()
    table = page.get_by_role("table", name="Pipelines", exact=True)
    row = table.get_by_role("row").filter(has=page.get_by_role("link", name="rlhf e2e", exact=True))
    expect(row).to_contain_text("SFT → Reward model → GRPO")
    row.get_by_role("checkbox").check()
    page.get_by_role("button", name="Compare final stages (1)").click()
    page.wait_for_url(re.compile(rf"/compare\?runs={runs[2]['id']}$"))

    # The GRPO stage's run page lists the completions it sampled at its steps, newest first, each with the reward
    # model's score (its only reward) and the total.
    page.goto(f"/pipelines/{pipeline_id}")
    page.get_by_role("list", name="Stages", exact=True).get_by_role("article", name=GRPO, exact=True).get_by_role(
        "link", name=re.compile(rf"^Run #{runs[2]['id']} ")).click()
    page.wait_for_url(re.compile(rf"/runs/{runs[2]['id']}$"))
    sampled = page.get_by_role("table", name="Sampled completions", exact=True)
    expect(sampled).to_be_visible()
    headers = sampled.get_by_role("columnheader")
    expect(headers.filter(has_text=re.compile(r"^reward_model$"))).to_have_count(1)
    columns = headers.all_inner_texts()
    assert columns[:4] == ["Step", "Prompt", "Completion", "Expected"] and "Total reward" in columns, columns
    rl_samples = api.get(f"/runs/{runs[2]['id']}/rl-samples").json()
    assert rl_samples["count"] > 0, "the GRPO stage recorded its sampled completions"
    rows = sampled.get_by_role("row").filter(has=page.get_by_role("cell"))
    expect(rows).to_have_count(rl_samples["count"])
    cells = rows.evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")
    steps = [int(row[0].split()[0]) for row in cells]
    assert steps == sorted(steps, reverse=True) and set(steps) <= set(range(1, GRPO_STEPS + 1)), steps
    assert GRPO_STEPS in steps, "the last step's completions are there"
    scores = [row[columns.index("reward_model")] for row in cells]
    assert all(re.fullmatch(r"-?\d+\.\d{3}|—", score) for score in scores), scores
    assert any(score != "—" for score in scores), "the reward model scored the completions"

    # The reward stage's page: no model generates there, so its playground scores a completion of your own.
    start_worker(settings.infer_queue)
    page.goto(f"/runs/{runs[1]['id']}")
    panel = page.get_by_role("region", name="Playground", exact=True)
    expect(panel.get_by_label("Score with reward model", exact=True)).to_have_value(str(runs[1]["id"]))
    expect(panel.get_by_label("Max new tokens")).to_have_count(0)
    panel.get_by_role("textbox", name="Prompt").fill("What is 2 plus 3?")
    panel.get_by_role("textbox", name="Your completion").fill("2 plus 3 is 5.")
    panel.get_by_role("button", name="Score", exact=True).click()
    _wait_for_score(panel, "your completion", "the reward run's score of your completion")
    expect(panel.get_by_role("region", name="your completion", exact=True)).to_contain_text("2 plus 3 is 5.")
    assert panel.get_by_role("region").count() == 1, "only your completion: a reward model writes none"

    # The SFT stage's playground, scored by the reward stage's run: the run's completion gets a reward too.
    page.goto(f"/runs/{runs[0]['id']}")
    panel = page.get_by_role("region", name="Playground", exact=True)
    panel.get_by_label("Score with reward model", exact=True).select_option(str(runs[1]["id"]))
    panel.get_by_role("textbox", name="Prompt").fill("What is 2 plus 3?")
    panel.get_by_label("Max new tokens").fill("8")
    panel.get_by_role("button", name="Generate", exact=True).click()
    _wait_for_score(panel, f"run {runs[0]['id']}: {runs[0]['name']}", "the reward run's score of the SFT run's completion")
    expect(panel.get_by_text(f"Scored by run {runs[1]['id']}: ", exact=False)).to_be_visible()
