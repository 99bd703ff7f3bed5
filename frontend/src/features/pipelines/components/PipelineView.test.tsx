// @vitest-environment jsdom
// The pipeline page as a user meets it: the stages in order with their status, why one was canceled, each run's
// figures, the GRPO stage's reward curve; Cancel while it runs; read-only when shared.
import "../../../test/canvas";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Run, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import type { PipelineDetail } from "../api/queries";
import { PipelineView } from "./PipelineView";

const run = (id: number, name: string, extra: Partial<Run> = {}) =>
  ({ id, name, status: "succeeded", project_id: 1, progress: { percent: 100 }, latest_train_loss: null, best_eval_loss: null, ...extra }) as Run;

function detail(status: PipelineDetail["status"]): PipelineDetail {
  const running = status === "running";
  return {
    id: 4, project_id: 1, name: "rlhf", status, created_by: "ada@example.com", created_at: "2026-12-01T00:00:00Z", final_run_id: 12,
    stage_count: 3, current_stage: running ? 2 : null, stage_statuses: ["succeeded", "succeeded", running ? "running" : "succeeded"],
    spec: { model: "tunelab-tiny", template: "rlhf", stages: [] },
    stages: [
      { position: 0, name: "SFT", objective: "sft", method: "lora", status: "succeeded", reason: null, start_from: 0, reward_from: null, run: run(10, "rlhf · SFT", { latest_train_loss: 2.5, best_eval_loss: 2.25 }) },
      { position: 1, name: "Reward model", objective: "reward", method: "lora", status: "succeeded", reason: null, start_from: 1, reward_from: null, run: run(11, "rlhf · Reward model", { reward_accuracy: 0.75, reward_margin: 0.5 }) },
      {
        position: 2, name: "GRPO", objective: "grpo", method: "lora", status: running ? "running" : "canceled", reason: running ? null : "canceled by ada@example.com",
        start_from: 1, reward_from: 2, run: run(12, "rlhf · GRPO", { status: running ? "running" : "canceled" }),
      },
    ],
  };
}

const methods = {
  objectives: ["sft", "reward", "grpo"].map((name) => ({ name, reward_run_param: name === "grpo" ? "reward_model_run" : null })),
  methods: [],
};

const reward: Schemas["MetricSeriesPublic"] = {
  key: "train/reward", downsampled: false, step: [1, 2, 3], value: [0.25, 0.5, 0.75], wall_time: [1, 2, 3], min: null, max: null,
} as Schemas["MetricSeriesPublic"];

function fakeApi(initial: PipelineDetail["status"]) {
  const calls: string[] = [];
  let current = detail(initial);
  fakeNetwork((request) => {
    const path = new URL(request.url).pathname;
    calls.push(`${request.method} ${path}`);
    if (request.method === "GET" && path === "/api/v1/pipelines/4") return json(current);
    if (request.method === "GET" && path === "/api/v1/methods") return json(methods);
    if (request.method === "POST" && path === "/api/v1/metrics/query") return json({ data: [{ run_id: 12, series: [reward] }] });
    if (request.method === "POST" && path === "/api/v1/pipelines/4/cancel") {
      current = detail("canceled");
      return json(current);
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return calls;
}

describe("PipelineView", () => {
  it("shows the stages in order with their figures, the reward curve and why a stage stopped", async () => {
    fakeApi("canceled");
    renderInApp(<PipelineView pipelineId={4} />);
    const chain = await screen.findByRole("list", { name: "Stages" });
    const cards = within(chain).getAllByRole("article");
    expect(cards.map((card) => within(card).getByRole("heading").textContent)).toEqual(["Stage 1 · SFT", "Stage 2 · Reward model", "Stage 3 · GRPO"]);
    expect(cards[0]).toHaveTextContent("Latest train loss2.5");
    expect(cards[0]).toHaveTextContent("Best eval loss2.25");
    expect(cards[1]).toHaveTextContent("Reward accuracy75.0 %");
    expect(cards[2]).toHaveTextContent("canceled by ada@example.com");
    expect(cards[2]).toHaveTextContent("rewarded by stage 2's model (Reward model)");
    expect(within(cards[2]).getByRole("link", { name: "Run #12 rlhf · GRPO" })).toHaveAttribute("href", "/runs/12");
    const curve = await within(cards[2]).findByRole("region", { name: "Reward of stage 3" });
    await waitFor(() => expect(curve.querySelector('[data-testid="chart-train/reward"]')).toHaveAttribute("data-points", "3"));
    // Only an online RL stage has a reward curve; a finished pipeline has nothing to cancel.
    expect(within(cards[1]).queryByRole("region")).toBeNull();
    expect(screen.queryByRole("button", { name: "Cancel" })).toBeNull();
    expect(screen.getByRole("button", { name: "Clone" })).toBeInTheDocument();
  });

  it("cancels a running pipeline and shows the answer", async () => {
    const user = userEvent.setup();
    const calls = fakeApi("running");
    renderInApp(<PipelineView pipelineId={4} />);
    await user.click(await screen.findByRole("button", { name: "Cancel" }));
    await waitFor(() => expect(screen.queryByRole("button", { name: "Cancel" })).toBeNull());
    expect(calls).toContain("POST /api/v1/pipelines/4/cancel");
    expect(screen.getByText("canceled by ada@example.com")).toBeInTheDocument();
  });

  it("is read-only when shared: no actions and no links into the app", async () => {
    fakeApi("running");
    renderInApp(<PipelineView pipelineId={4} readOnly />);
    const chain = await screen.findByRole("list", { name: "Stages" });
    expect(screen.queryByRole("button")).toBeNull();
    expect(within(chain).queryByRole("link")).toBeNull();
    expect(chain).toHaveTextContent("Run #12 rlhf · GRPO");
  });
});
