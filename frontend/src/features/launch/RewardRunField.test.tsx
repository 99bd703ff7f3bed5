// An online RL objective's reward model run as a user meets it in the launch form: a choice among the project's
// succeeded runs of the objective that scores text (GET /methods says which), sent as the run's id.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, useParams } from "react-router";
import { describe, expect, it } from "vitest";

import type { Dataset, Run, Schemas } from "../../api/client";
import { apiError, fakeNetwork, json } from "../../test/network";
import { renderInApp } from "../../test/render";
import type { Catalog, Queue } from "./launchChoice";
import { LaunchForm } from "./LaunchForm";

// Shaped as the API publishes them: the param's Pydantic schema, and reward_run_param naming it.
const rewardRunSchema = {
  anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }],
  default: null,
  title: "Reward model run",
  description: "A succeeded reward run of this project: its model's score of each completion is a reward",
};

function objective(name: string, formats: string[], extra: Partial<Schemas["ObjectivePublic"]> = {}): Schemas["ObjectivePublic"] {
  return {
    name, title: name.toUpperCase(), description: `${name} training`, dataset_formats: formats, metric_keys: [], reports_perplexity: false,
    is_default: name === "sft", learning_rate_scale: 1, next_stage: null, params_schema: {}, reward_run_param: null, scores_text: false,
    defaults: {}, method_defaults: {}, ...extra,
  };
}

const catalog: Catalog = {
  objectives: [
    objective("sft", ["instruction"], { reports_perplexity: true }),
    objective("reward", ["preference"], { scores_text: true, metric_keys: ["accuracy", "margin"] }),
    objective("grpo", ["prompt"], {
      params_schema: {
        type: "object",
        properties: { num_generations: { type: "integer", minimum: 2, default: 4, title: "Generations" }, reward_model_run: rewardRunSchema },
      },
      reward_run_param: "reward_model_run",
      defaults: { reward_model_run: null },
    }),
  ],
  methods: [
    {
      name: "lora", title: "LoRA", description: "LoRA fine-tuning", objectives: ["sft", "reward", "grpo"], peft: true, requires_cuda: false, defaults: {},
      params_schema: { type: "object", properties: { max_steps: { type: "integer", minimum: 1, default: 60, title: "Max Steps" } } },
    },
  ],
  models: [
    {
      name: "tunelab-tiny", title: "Tunelab tiny", description: "A tiny model", available: true, how_to_get: null, path: null,
      source: "bundled", param_defaults: {},
    },
  ],
  datasets: [
    { id: 3, name: "alpaca-mini", format: "instruction", row_count: 200, bundled: true } as Dataset,
    { id: 4, name: "math-prompts", format: "prompt", row_count: 100, bundled: true } as Dataset,
  ],
};

const queues: Queue[] = [{ name: "cpu", default: true, workers: 1 }];

// The project's succeeded reward runs, newest first as GET /runs lists them; one never evaluated.
const rewardRuns = [
  { id: 12, name: "rm-helpful", objective: "reward", status: "succeeded", reward_accuracy: 0.7412 },
  { id: 9, name: "rm-first", objective: "reward", status: "succeeded", reward_accuracy: null },
] as unknown as Run[];

function RunPageStub() {
  return <p>run page {useParams().runId}</p>;
}

type Sent = { method: string; path: string; query: URLSearchParams; body: unknown };

function fakeApi({ listing = true } = {}): Sent[] {
  const sent: Sent[] = [];
  fakeNetwork(async (request) => {
    const url = new URL(request.url);
    const body = request.method === "GET" ? null : await request.json();
    sent.push({ method: request.method, path: url.pathname, query: url.searchParams, body });
    if (request.method === "GET" && url.pathname === "/api/v1/runs" && !listing) return apiError(503, "UNAVAILABLE", "database is down");
    if (request.method === "GET" && url.pathname === "/api/v1/runs") {
      const runs = rewardRuns.filter((run) => run.objective === url.searchParams.get("objective"));
      return json({ data: runs, count: runs.length, next_cursor: null });
    }
    if (request.method === "POST" && url.pathname === "/api/v1/runs") return json({ id: 50 } as Run, 201);
    if (request.method === "POST" && url.pathname === "/api/v1/estimates") return apiError(422, "VALIDATION_ERROR", "no estimate in this test");
    return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
  });
  return sent;
}

function renderForm(source?: Run) {
  renderInApp(<LaunchForm catalog={catalog} queues={queues} source={source} projectId={7} />, {
    at: "/runs/new",
    path: "/runs/new",
    routes: <Route path="/runs/:runId" element={<RunPageStub />} />,
  });
}

const optionTexts = (select: HTMLElement) => within(select).getAllByRole("option").map((o) => o.textContent);
const runLists = (sent: Sent[]) => sent.filter((s) => s.method === "GET" && s.path === "/api/v1/runs");
const launchedParams = (sent: Sent[]) =>
  sent.filter((s) => s.method === "POST" && s.path === "/api/v1/runs").map((s) => (s.body as { params: Record<string, unknown> }).params);

describe("LaunchForm's reward model run", () => {
  it("offers the project's succeeded reward runs by name and accuracy, and sends the chosen run's id", async () => {
    const sent = fakeApi();
    renderForm();
    const user = userEvent.setup();
    await user.selectOptions(screen.getByLabelText("Objective"), "grpo");

    const field = screen.getByLabelText("Reward model run");
    expect(field.tagName).toBe("SELECT");
    await waitFor(() =>
      expect(optionTexts(field)).toEqual(["None", "Run #12 · rm-helpful · reward accuracy 74 %", "Run #9 · rm-first"]),
    );
    expect(field).toHaveValue("");
    expect(field).toHaveAccessibleDescription(/A succeeded reward run of this project/);
    // The objective's other integers stay number inputs.
    expect(screen.getByLabelText("Generations")).toHaveAttribute("type", "number");
    // Asked of the objective that scores text only, in this project, succeeded runs only.
    expect(runLists(sent).map((s) => [s.query.get("objective"), s.query.get("project_id"), s.query.getAll("status")])).toEqual([
      ["reward", "7", ["succeeded"]],
    ]);

    await user.selectOptions(field, "12");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(launchedParams(sent)).toEqual([{ reward_model_run: 12 }]);
  });

  it("sends no reward run when None stays chosen", async () => {
    const sent = fakeApi();
    renderForm();
    const user = userEvent.setup();
    await user.selectOptions(screen.getByLabelText("Objective"), "grpo");
    await waitFor(() => expect(optionTexts(screen.getByLabelText("Reward model run"))).toHaveLength(3));
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(launchedParams(sent)).toEqual([{}]);
  });

  it("keeps a cloned run's reward run that is not listed, as its id", async () => {
    const sent = fakeApi();
    const source = { name: "grpo-old", objective: "grpo", method: "lora", model: "tunelab-tiny", dataset_id: 4, queue: "cpu", config: { params: { reward_model_run: 5 } } };
    renderForm(source as unknown as Run);
    const user = userEvent.setup();

    const field = screen.getByLabelText("Reward model run");
    await waitFor(() => expect(optionTexts(field)).toHaveLength(4));
    expect(optionTexts(field)).toContain("Run #5");
    expect(field).toHaveValue("5");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(launchedParams(sent)).toEqual([{ reward_model_run: 5 }]);
  });

  it("says so at the field when the runs cannot be listed", async () => {
    fakeApi({ listing: false });
    renderForm();
    await userEvent.selectOptions(screen.getByLabelText("Objective"), "grpo");

    const field = screen.getByLabelText("Reward model run");
    await waitFor(() => expect(field).toHaveAccessibleDescription(/the runs could not be listed: database is down/));
    expect(optionTexts(field)).toEqual(["None"]);
  });

  it("leaves the other objectives' inputs as they are and lists no runs for them", async () => {
    const sent = fakeApi();
    renderForm();

    expect(screen.getByLabelText("Objective")).toHaveValue("sft");
    expect(screen.getByLabelText("Max Steps")).toHaveAttribute("type", "number");
    expect(screen.queryByLabelText("Reward model run")).not.toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(runLists(sent)).toEqual([]);
  });
});
