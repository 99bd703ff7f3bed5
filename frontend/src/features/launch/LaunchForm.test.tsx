// The launch form as a user meets it: the fields come from the chosen method's JSON Schema, a launch sends the
// resolved body through the real API client, and a 422 lands at the field it names.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, useParams } from "react-router";
import { describe, expect, it } from "vitest";

import type { Dataset, Run, Schemas } from "../../api/client";
import { apiError, fakeNetwork, json } from "../../test/network";
import { renderInApp } from "../../test/render";
import type { Catalog, Queue } from "./launchChoice";
import { LaunchForm } from "./LaunchForm";

// Shaped as the API publishes them (Pydantic's JSON Schema of each method's params).
const loraSchema = {
  type: "object",
  properties: {
    learning_rate: { type: "number", exclusiveMinimum: 0, default: 0.0002, title: "Learning Rate", description: "Peak learning rate" },
    max_steps: { type: "integer", minimum: 1, default: 60, title: "Max Steps" },
    r: { type: "integer", minimum: 1, default: 8, title: "R", description: "LoRA rank" },
    target_modules: {
      anyOf: [{ type: "array", items: { type: "string" } }, { type: "string" }],
      default: ["q_proj", "v_proj"],
      title: "Target Modules",
    },
    gradient_checkpointing: { type: "boolean", default: false, title: "Gradient Checkpointing" },
  },
};
const fullSchema = {
  type: "object",
  properties: {
    learning_rate: { type: "number", exclusiveMinimum: 0, default: 0.00002, title: "Learning Rate" },
    max_steps: { type: "integer", minimum: 1, default: 60, title: "Max Steps" },
  },
};

function method(name: string, title: string, params_schema: Record<string, unknown>): Schemas["MethodPublic"] {
  return { name, title, description: `${title} fine-tuning`, objectives: ["sft"], peft: name !== "full", requires_cuda: false, params_schema, defaults: {} };
}

const catalog: Catalog = {
  objectives: [
    {
      name: "sft", title: "SFT", description: "Supervised fine-tuning", dataset_formats: ["instruction"], metric_keys: [],
      is_default: true, reports_perplexity: true, learning_rate_scale: 1, next_stage: "dpo", params_schema: {}, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {},
    },
  ],
  methods: [method("lora", "LoRA", loraSchema), method("full", "Full", fullSchema)],
  models: [
    {
      name: "tunelab-tiny", title: "Tunelab tiny", description: "A tiny model", available: true, how_to_get: null, path: null,
      source: "bundled", param_defaults: {},
    },
  ],
  datasets: [{ id: 3, name: "alpaca-mini", format: "instruction", row_count: 200, bundled: true } as Dataset],
};

// SFT, then DPO on its weights: LoRA serves both; the tiny model and another one.
const stagedCatalog: Catalog = {
  objectives: [
    ...catalog.objectives,
    {
      name: "dpo", title: "DPO", description: "Preference optimization", dataset_formats: ["preference"], metric_keys: [],
      is_default: false, reports_perplexity: false, learning_rate_scale: 1, next_stage: null, params_schema: {}, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {},
    },
  ],
  methods: [{ ...method("lora", "LoRA", loraSchema), objectives: ["sft", "dpo"] }, method("full", "Full", fullSchema)],
  models: [...catalog.models, { ...catalog.models[0], name: "other", title: "Other model", description: "" }],
  datasets: [...catalog.datasets, { id: 8, name: "prefs", format: "preference", row_count: 50, bundled: true } as Dataset],
};

// A succeeded SFT run to continue from, on the model that is not the form's default.
const parent = {
  id: 12, name: "sft-lora", project_id: 7, status: "succeeded", external: false, objective: "sft", method: "lora",
  model: "other", queue: "gpu", dataset_id: 3, base_run_id: null, config: { params: { r: 32 } },
} as unknown as Run;

// As GET /queues lists them: the server's declared training queues, the workers seen on each.
const queues: Queue[] = [
  { name: "cpu", default: true, workers: 2 },
  { name: "gpu", default: false, workers: 1 },
  { name: "gpu-80gb", default: false, workers: 0 },
];

function RunPageStub() {
  return <p>run page {useParams().runId}</p>;
}

function renderForm(source?: Run, { baseRun, from = catalog }: { baseRun?: Run; from?: Catalog } = {}) {
  renderInApp(<LaunchForm catalog={from} queues={queues} source={source} baseRun={baseRun} projectId={7} />, {
    at: "/runs/new",
    path: "/runs/new",
    routes: <Route path="/runs/:runId" element={<RunPageStub />} />,
  });
}

type Sent = { method: string; path: string; body: unknown };

/** Answers POST /api/v1/runs with `launch`; the estimate panel's requests get a refusal it shows quietly. */
function fakeApi(launch: (body: unknown) => Response): Sent[] {
  const sent: Sent[] = [];
  fakeNetwork(async (request) => {
    const path = new URL(request.url).pathname;
    const body = request.method === "GET" ? null : await request.json();
    sent.push({ method: request.method, path, body });
    if (request.method === "POST" && path === "/api/v1/runs") return launch(body);
    if (request.method === "POST" && path === "/api/v1/estimates") return apiError(422, "VALIDATION_ERROR", "no estimate in this test");
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return sent;
}

const launches = (sent: Sent[]) => sent.filter((s) => s.path === "/api/v1/runs");

describe("LaunchForm", () => {
  it("renders the chosen method's schema fields with their defaults, and the other method's when it changes", async () => {
    fakeApi(() => apiError(500, "UNEXPECTED", "no launch in this test"));
    renderForm();

    expect(screen.getByRole("heading", { name: "Parameters · SFT · LoRA" })).toBeInTheDocument();
    expect(screen.getByLabelText("Learning Rate")).toHaveValue(0.0002);
    expect(screen.getByLabelText("R")).toHaveValue(8);
    expect(screen.getByLabelText("Target Modules")).toHaveValue("q_proj, v_proj");
    expect(screen.getByLabelText("Gradient Checkpointing")).not.toBeChecked();
    expect(screen.getByText("LoRA rank")).toBeInTheDocument();

    await userEvent.selectOptions(screen.getByLabelText("Method"), "full");
    expect(screen.getByRole("heading", { name: "Parameters · SFT · Full" })).toBeInTheDocument();
    expect(screen.queryByLabelText("R")).not.toBeInTheDocument();
    expect(screen.getByLabelText("Learning Rate")).toHaveValue(0.00002);
  });

  it("submits the resolved body and opens the new run", async () => {
    const sent = fakeApi(() => json({ id: 42 } as Run, 201));
    renderForm();
    const user = userEvent.setup();

    await user.clear(screen.getByLabelText("R"));
    await user.type(screen.getByLabelText("R"), "16");
    await user.clear(screen.getByLabelText("Target Modules"));
    await user.type(screen.getByLabelText("Target Modules"), "q_proj");
    await user.type(screen.getByLabelText("Name"), "  rank-16  ");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 42")).toBeInTheDocument();
    expect(launches(sent)).toEqual([
      {
        method: "POST",
        path: "/api/v1/runs",
        body: {
          name: "rank-16",
          objective: "sft",
          method: "lora",
          model: "tunelab-tiny",
          dataset: 3,
          queue: "cpu",
          // Typed from the inputs' text (a number as a number, one module as a plain string); the fields left at
          // their defaults are not sent: the API fills in the same.
          params: { r: 16, target_modules: "q_proj" },
          external: false,
          project_id: 7,
        },
      },
    ]);
  });

  it("shows a 422's message at the field it names and stays on the form", async () => {
    const sent = fakeApi(() =>
      apiError(422, "VALIDATION_ERROR", "params.target_modules: tunelab-tiny has no module named k_proj", [
        { field: "params.target_modules", message: "tunelab-tiny has no module named k_proj", type: "value_error" },
      ]),
    );
    renderForm();
    const user = userEvent.setup();

    await user.clear(screen.getByLabelText("Target Modules"));
    await user.type(screen.getByLabelText("Target Modules"), "k_proj");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    const error = await screen.findByTestId("field-error-params.target_modules");
    expect(error).toHaveTextContent("tunelab-tiny has no module named k_proj");
    expect(screen.getByLabelText("Target Modules")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByLabelText("Target Modules")).toHaveAccessibleDescription(/no module named k_proj/);
    expect(launches(sent)).toHaveLength(1);
    expect(screen.queryByText(/run page/)).not.toBeInTheDocument();

    // Typing in the field clears its error.
    await user.type(screen.getByLabelText("Target Modules"), "x");
    await waitFor(() => expect(screen.queryByTestId("field-error-params.target_modules")).not.toBeInTheDocument());
  });

  it("moves focus to a summary of what to fix after a refused launch, linking each field", async () => {
    fakeApi(() =>
      apiError(422, "VALIDATION_ERROR", "params.r: must be at least 1", [{ field: "params.r", message: "must be at least 1", type: "value_error" }]),
    );
    renderForm();
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    const summary = await screen.findByTestId("launch-error-summary");
    expect(summary).toHaveAttribute("role", "alert");
    expect(summary).toHaveTextContent("The run was not launched: one field needs attention · params.r: must be at least 1");
    await waitFor(() => expect(summary.parentElement).toHaveFocus());
    await user.click(within(summary).getByRole("link", { name: "params.r" }));
    expect(screen.getByLabelText("R")).toHaveFocus();
  });

  it("offers only the declared queues, each with its workers, and sends the one chosen", async () => {
    const sent = fakeApi(() => json({ id: 43 } as Run, 201));
    renderForm();
    const user = userEvent.setup();

    const field = screen.getByLabelText("Queue");
    expect(field.tagName).toBe("SELECT");
    expect(within(field).getAllByRole("option").map((o) => o.textContent)).toEqual([
      "cpu · 2 workers · default",
      "gpu · 1 worker",
      "gpu-80gb · no worker now",
    ]);
    expect(field).toHaveValue("cpu");
    await user.selectOptions(field, "gpu");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 43")).toBeInTheDocument();
    expect(launches(sent).map((s) => (s.body as { queue: string }).queue)).toEqual(["gpu"]);
  });

  it("clones a run whose queue is no longer declared onto the default queue", () => {
    fakeApi(() => apiError(500, "UNEXPECTED", "no launch in this test"));
    const source = { name: "old", objective: "sft", method: "lora", model: "tunelab-tiny", dataset_id: 3, queue: "infer", config: { params: {} } };
    renderForm(source as unknown as Run);

    expect(screen.getByLabelText("Queue")).toHaveValue("cpu");
    expect(within(screen.getByLabelText("Queue")).queryByRole("option", { name: /infer/ })).not.toBeInTheDocument();
  });

  it("starts from a run: says so, fixes its base model, takes the next stage and sends base_run instead of a model", async () => {
    const sent = fakeApi(() => json({ id: 44 } as Run, 201));
    renderForm(undefined, { baseRun: parent, from: stagedCatalog });
    const user = userEvent.setup();

    const notice = screen.getByTestId("base-run-notice");
    expect(notice).toHaveTextContent("Starts from run #12 sft-lora (sft · lora, its trained weights and tokenizer)");
    expect(within(notice).getByRole("link", { name: "run #12 sft-lora" })).toHaveAttribute("href", "/runs/12");
    expect(screen.getByLabelText("Base model")).toHaveValue("other");
    expect(screen.getByLabelText("Base model")).toBeDisabled();
    expect(screen.getByLabelText("Base model")).toHaveAccessibleDescription(/Fixed: run #12 trained from this model/);
    expect(screen.getByLabelText("Objective")).toHaveValue("dpo");
    expect(screen.getByLabelText("Method")).toHaveValue("lora");
    expect(screen.getByLabelText("Dataset")).toHaveValue("8");
    expect(screen.getByLabelText("Queue")).toHaveValue("gpu");

    // The objective stays free: back to SFT, with a dataset of its format.
    await user.selectOptions(screen.getByLabelText("Objective"), "sft");
    expect(screen.getByLabelText("Dataset")).toHaveValue("3");
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 44")).toBeInTheDocument();
    const [launch] = launches(sent);
    expect(launch.body).toMatchObject({ objective: "sft", method: "lora", dataset: 3, queue: "gpu", base_run: 12, project_id: 7 });
    expect(launch.body).not.toHaveProperty("model");
  });

  it("sends no base_run for a run of its own", async () => {
    const sent = fakeApi(() => json({ id: 45 } as Run, 201));
    renderForm(undefined, { from: stagedCatalog });
    expect(screen.queryByTestId("base-run-notice")).not.toBeInTheDocument();
    expect(screen.getByLabelText("Base model")).toBeEnabled();
    await userEvent.click(screen.getByRole("button", { name: "Launch run" }));

    expect(await screen.findByText("run page 45")).toBeInTheDocument();
    expect(launches(sent)[0].body).not.toHaveProperty("base_run");
    expect(launches(sent)[0].body).toMatchObject({ model: "tunelab-tiny" });
  });

  it("shows the server's refusal of the run started from in the error summary, linking to the notice", async () => {
    fakeApi(() =>
      apiError(422, "VALIDATION_ERROR", "base_run: run 12 (sft-lora) has no adapter/ folder left to start from", [
        { field: "base_run", message: "weights missing" },
      ]),
    );
    renderForm(undefined, { baseRun: parent, from: stagedCatalog });
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    const summary = await screen.findByTestId("launch-error-summary");
    expect(summary).toHaveTextContent("The run was not launched: one field needs attention · base_run: weights missing");
    expect(within(screen.getByTestId("base-run-notice")).getByTestId("field-error-base_run")).toHaveTextContent("weights missing");
    await user.click(within(summary).getByRole("link", { name: "base_run" }));
    expect(screen.getByTestId("base-run-notice")).toHaveFocus();
    expect(screen.queryByText(/run page/)).not.toBeInTheDocument();
  });

  it("refuses a value that does not parse at its field without sending anything", async () => {
    const sent = fakeApi(() => json({ id: 1 } as Run, 201));
    renderForm();
    const user = userEvent.setup();

    await user.clear(screen.getByLabelText("Max Steps"));
    await user.click(screen.getByRole("button", { name: "Launch run" }));

    const field = screen.getByLabelText("Max Steps").closest(".field") as HTMLElement;
    expect(within(field).getByTestId("field-error-params.max_steps")).toBeInTheDocument();
    expect(launches(sent)).toEqual([]);
  });
});
