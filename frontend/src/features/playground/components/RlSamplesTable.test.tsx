// @vitest-environment jsdom
// The sampled completions of an online RL run as its page shows them: a column per reward, newest step first; none for
// a run of another objective (GET /methods says which objectives name a reward run).
import { screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import type { Run, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import type { RlSample } from "../api/queries";
import { RlSamplesTable } from "./RlSamplesTable";

const objective = (name: string, rewardRunParam: string | null) =>
  ({ name, reward_run_param: rewardRunParam, scores_text: false }) as Schemas["ObjectivePublic"];

const rows: RlSample[] = [
  { step: 2, split: "train", prompt: "Add 2 and 3", completion: "5", expected: "5", rewards: { reward_model: 0.5, format: 1 }, reward: 1.5, advantage: 0.2 },
  { step: 1, split: "train", prompt: "Add 1 and 1", completion: "", expected: null, rewards: { reward_model: null }, reward: null, advantage: null },
];

// Run 8 trained with GRPO, run 9 with SFT.
function renderTables(...runIds: number[]) {
  const asked: string[] = [];
  fakeNetwork(async (request) => {
    const path = new URL(request.url).pathname;
    asked.push(path);
    if (path === "/api/v1/methods") return json({ objectives: [objective("sft", null), objective("grpo", "reward_model_run")], methods: [] });
    if (path === "/api/v1/runs/8") return json({ id: 8, objective: "grpo", status: "succeeded" } as Run);
    if (path === "/api/v1/runs/9") return json({ id: 9, objective: "sft", status: "succeeded" } as Run);
    if (path === "/api/v1/runs/8/rl-samples") return json({ data: rows, count: rows.length });
    return apiError(404, "NOT_FOUND", `${path} is not faked`);
  });
  renderInApp(<>{runIds.map((id) => <RlSamplesTable key={id} runId={id} />)}</>);
  return asked;
}

describe("RlSamplesTable", () => {
  it("shows an online RL run's completions with a column per reward and the total, newest step first", async () => {
    renderTables(8);
    const table = await screen.findByRole("table", { name: "Sampled completions" });
    expect(within(table).getAllByRole("columnheader").map((th) => th.textContent)).toEqual([
      "Step", "Prompt", "Completion", "Expected", "reward_model", "format", "Total reward", "Advantage",
    ]);
    const cells = within(table).getAllByRole("row").slice(1).map((row) => within(row).getAllByRole("cell").map((td) => td.textContent));
    expect(cells).toEqual([
      ["2 train", "Add 2 and 3", "5", "5", "0.500", "1.000", "1.500", "0.200"],
      ["1 train", "Add 1 and 1", "(nothing: it ended at once)", "—", "—", "—", "—", "—"],
    ]);
  });

  it("shows nothing, and reads no samples, for a run of another objective", async () => {
    const asked = renderTables(9, 8);
    // Once the GRPO run's table shows, the SFT run's objective is known as well.
    await screen.findByRole("table", { name: "Sampled completions" });
    await waitFor(() => expect(asked).toContain("/api/v1/runs/9"));
    expect(screen.getAllByRole("table")).toHaveLength(1);
    expect(asked).not.toContain("/api/v1/runs/9/rl-samples");
  });
});
