// @vitest-environment jsdom
// The pipeline form as a user meets it: a template's stages, each a fieldset with its dataset (the suggested one),
// method and params from the schema (the template's prefilled, the reward model run left to reward_from), one request
// through the real client, and a stage's refusal shown at that stage's field.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";

import type { Dataset, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import type { Catalog } from "../../launch";
import type { PipelineTemplate } from "../api/queries";
import { PipelineForm } from "./PipelineForm";

const shared = {
  max_steps: { anyOf: [{ minimum: 0, type: "integer" }, { type: "null" }], default: 60, title: "Max steps" },
  eval_split: { default: 0.1, minimum: 0, exclusiveMaximum: 1, title: "Eval split", type: "number" },
};

function objective(name: string, title: string, formats: string[], properties: Record<string, unknown> = {}): Schemas["ObjectivePublic"] {
  return {
    name, title, description: title, dataset_formats: formats, metric_keys: [], reports_perplexity: false, is_default: name === "sft",
    learning_rate_scale: 1, next_stage: null, params_schema: { type: "object", properties },
    reward_run_param: "reward_model_run" in properties ? "reward_model_run" : null, scores_text: false, defaults: {}, method_defaults: {},
  };
}

const catalog: Catalog = {
  objectives: [
    objective("sft", "Supervised fine-tuning", ["instruction"]),
    { ...objective("reward", "Reward model", ["preference"]), scores_text: true },
    objective("grpo", "GRPO", ["prompt", "instruction"], {
      reward_exact_match: { default: 1, minimum: 0, maximum: 100, title: "Exact-match reward (weight)", type: "number" },
      reward_model_run: { anyOf: [{ type: "integer" }, { type: "null" }], default: null, title: "Reward model run" },
    }),
  ],
  methods: [
    {
      name: "lora", title: "LoRA", description: "LoRA", objectives: ["sft", "reward", "grpo"], peft: true, requires_cuda: false,
      params_schema: { type: "object", properties: shared }, defaults: { max_steps: 60, eval_split: 0.1 },
    },
    {
      name: "full", title: "Full fine-tuning", description: "Every weight", objectives: ["sft"], peft: false, requires_cuda: false,
      params_schema: { type: "object", properties: shared }, defaults: { max_steps: 60, eval_split: 0.1 },
    },
  ],
  models: [
    { name: "tunelab-tiny", title: "Tunelab tiny", description: "Tiny", available: true, how_to_get: null, path: null, source: "bundled", param_defaults: {} },
  ],
  datasets: [
    { id: 1, name: "mine", format: "instruction", row_count: 10, bundled: false } as Dataset,
    { id: 2, name: "tiny-tasks", format: "instruction", row_count: 600, bundled: true } as Dataset,
    { id: 3, name: "tiny-preferences", format: "preference", row_count: 300, bundled: true } as Dataset,
  ],
};

const stage = (name: string, objectiveName: string, formats: string[], suggested: string, extra: Partial<PipelineTemplate["stages"][number]> = {}) => ({
  name, objective: objectiveName, method: "lora", dataset_formats: formats, suggested_dataset: suggested, params: {}, start_from: null, reward_from: null, ...extra,
});

const templates: PipelineTemplate[] = [
  {
    name: "rlhf", title: "RLHF: SFT → reward model → GRPO", description: "Three steps",
    stages: [
      stage("SFT", "sft", ["instruction"], "tiny-tasks"),
      stage("Reward model", "reward", ["preference"], "tiny-preferences", { start_from: 1 }),
      stage("GRPO", "grpo", ["prompt", "instruction"], "tiny-tasks", { params: { reward_exact_match: 0 }, start_from: 1, reward_from: 2 }),
    ],
  },
  { name: "sft-dpo", title: "DPO after SFT", description: "Two steps", stages: [stage("SFT", "sft", ["instruction"], "tiny-tasks")] },
  {
    name: "grpo-alone", title: "GRPO on its own", description: "Rewarded by an existing reward run",
    stages: [stage("GRPO", "grpo", ["prompt", "instruction"], "tiny-tasks", { params: { reward_model_run: 5 } })],
  },
];

// The project's succeeded reward runs, newest first as GET /runs lists them.
const rewardRuns = [
  { id: 12, name: "rm-helpful", objective: "reward", status: "succeeded", reward_accuracy: 0.75 },
  { id: 9, name: "rm-first", objective: "reward", status: "succeeded", reward_accuracy: null },
];

function renderForm(answer: (body: unknown) => Response, runLists: URLSearchParams[] = []) {
  const sent: unknown[] = [];
  fakeNetwork(async (request) => {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/api/v1/runs") {
      runLists.push(url.searchParams);
      const runs = rewardRuns.filter((run) => run.objective === url.searchParams.get("objective"));
      return json({ data: runs, count: runs.length, next_cursor: null });
    }
    if (request.method === "POST" && url.pathname === "/api/v1/pipelines") {
      const body = await request.json();
      sent.push(body);
      return answer(body);
    }
    throw new Error(`unexpected ${request.method} ${request.url}`);
  });
  renderInApp(<PipelineForm catalog={catalog} templates={templates} queues={[{ name: "cpu", default: true, workers: 1 }]} projectId={7} />, {
    at: "/pipelines/new",
    path: "/pipelines/new",
    routes: <Route path="/pipelines/:pipelineId" element={<p>pipeline page</p>} />,
  });
  return sent;
}

describe("PipelineForm", () => {
  it("launches the template's stages with their datasets, edited params and references", async () => {
    const user = userEvent.setup();
    const sent = renderForm(() => json({ id: 12 }, 201));
    const grpo = screen.getByRole("group", { name: "Stage 3 · GRPO" });
    expect(grpo).toHaveTextContent("starts from stage 1's weights (SFT), rewarded by stage 2's model (Reward model)");
    // The reward model run is the pipeline's to fill in from stage 2.
    expect(within(grpo).queryByLabelText(/Reward model run/)).toBeNull();
    expect(within(grpo).getByLabelText(/Exact-match reward/)).toHaveValue(0);
    const reward = screen.getByRole("group", { name: "Stage 2 · Reward model" });
    expect(within(reward).getByLabelText("Dataset")).toHaveValue("3");
    await user.clear(within(grpo).getByLabelText("Max steps"));
    await user.type(within(grpo).getByLabelText("Max steps"), "2");
    await user.type(screen.getByLabelText("Pipeline name"), "rlhf");
    await user.click(screen.getByRole("button", { name: /^Launch pipeline/ }));
    await screen.findByText("pipeline page");
    expect(sent).toEqual([
      {
        project_id: 7, name: "rlhf", model: "tunelab-tiny", template: "rlhf", queue: "cpu",
        stages: [
          { name: "SFT", objective: "sft", method: "lora", dataset_id: 2, params: {} },
          { name: "Reward model", objective: "reward", method: "lora", dataset_id: 3, params: {}, start_from: 1 },
          { name: "GRPO", objective: "grpo", method: "lora", dataset_id: 2, params: { reward_exact_match: 0, max_steps: 2 }, start_from: 1, reward_from: 2 },
        ],
      },
    ]);
  });

  it("shows a stage's refusal at that stage's field and stays on the form", async () => {
    const user = userEvent.setup();
    renderForm(() =>
      apiError(422, "VALIDATION_ERROR", "stages.1.params.eval_split: stage 2 (Reward model): Input should be less than 1", [
        { field: "stages.1.params.eval_split", message: "Input should be less than 1", stage: 1 },
      ]),
    );
    await user.type(screen.getByLabelText("Pipeline name"), "bad");
    await user.click(screen.getByRole("button", { name: /^Launch pipeline/ }));
    const reward = screen.getByRole("group", { name: "Stage 2 · Reward model" });
    await waitFor(() => expect(within(reward).getByLabelText("Eval split")).toHaveAttribute("aria-invalid", "true"));
    expect(within(reward).getByLabelText("Eval split")).toHaveAccessibleDescription(/Input should be less than 1/);
    expect(within(screen.getByRole("group", { name: "Stage 1 · SFT" })).getByLabelText("Eval split")).not.toHaveAttribute("aria-invalid");
    expect(screen.getByRole("alert")).toHaveTextContent("Stage 2 · Reward model: Eval split: Input should be less than 1");
    expect(screen.queryByText("pipeline page")).toBeNull();
  });

  it("asks for a name before sending anything, and a new template brings its own stages", async () => {
    const user = userEvent.setup();
    const sent = renderForm(() => json({ id: 1 }, 201));
    await user.click(screen.getByRole("button", { name: /^Launch pipeline/ }));
    expect(await screen.findByText("Give the pipeline a name")).toBeInTheDocument();
    expect(sent).toEqual([]);
    await user.click(screen.getByRole("radio", { name: /^DPO after SFT/ }));
    expect(screen.queryByRole("group", { name: "Stage 3 · GRPO" })).toBeNull();
    expect(screen.getByRole("button", { name: "Launch pipeline (1 stage)" })).toBeInTheDocument();
  });

  it("offers a stage no earlier stage rewards the project's reward runs by name, and sends the one chosen", async () => {
    const user = userEvent.setup();
    const runLists: URLSearchParams[] = [];
    const sent = renderForm(() => json({ id: 3 }, 201), runLists);
    // The RLHF template's GRPO stage is rewarded by stage 2: no runs to list.
    expect(runLists).toEqual([]);
    await user.click(screen.getByRole("radio", { name: /^GRPO on its own/ }));
    const grpo = screen.getByRole("group", { name: "Stage 1 · GRPO" });
    const field = within(grpo).getByLabelText("Reward model run");
    expect(field.tagName).toBe("SELECT");
    // The template's run, not among the project's, is kept by its id.
    await waitFor(() =>
      expect(within(field).getAllByRole("option").map((o) => o.textContent)).toEqual([
        "None", "Run #12 · rm-helpful · reward accuracy 75 %", "Run #9 · rm-first", "Run #5",
      ]),
    );
    expect(field).toHaveValue("5");
    expect(runLists.map((q) => [q.get("objective"), q.get("project_id"), q.getAll("status")])).toEqual([["reward", "7", ["succeeded"]]]);
    await user.selectOptions(field, "12");
    await user.type(screen.getByLabelText("Pipeline name"), "grpo");
    await user.click(screen.getByRole("button", { name: /^Launch pipeline/ }));
    await screen.findByText("pipeline page");
    expect(sent).toEqual([
      {
        project_id: 7, name: "grpo", model: "tunelab-tiny", template: "grpo-alone", queue: "cpu",
        stages: [{ name: "GRPO", objective: "grpo", method: "lora", dataset_id: 2, params: { reward_model_run: 12 } }],
      },
    ]);
  });
});
