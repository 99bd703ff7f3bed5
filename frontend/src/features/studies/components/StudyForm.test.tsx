// @vitest-environment jsdom
// The study form as a user meets it: labelled as the run launch form (titles, availability, formats, queues), shared
// params from the methods' schema, a grid whose params are picked from the picked methods' schema and whose values are
// checked against it, a succeeded run to start from, one request through the real client, and a refusal at the field
// (or grid row) it names with focus on a summary.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, useParams } from "react-router";
import { describe, expect, it } from "vitest";

import type { Dataset, Run, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { StudyForm, type StudyCatalog, type StudyQueue } from "./StudyForm";

// Shaped as GET /methods publishes them (Pydantic's JSON Schema of each method's params).
const sharedSchema = {
  max_steps: { anyOf: [{ minimum: 0, type: "integer" }, { type: "null" }], default: 60, title: "Max steps" },
  seed: { default: 42, minimum: 0, title: "Seed", type: "integer" },
  learning_rate: { default: 0.001, exclusiveMinimum: 0, maximum: 1, title: "Learning rate", description: "Peak learning rate of AdamW", type: "number" },
  per_device_train_batch_size: { default: 8, minimum: 1, maximum: 1024, title: "Batch size per device", description: "Examples per device per forward pass", type: "integer" },
  max_length: { default: 256, minimum: 8, maximum: 131072, title: "Max length (tokens)", description: "Longest tokenized example; longer ones are truncated", type: "integer" },
  eval_split: { default: 0.1, minimum: 0, exclusiveMaximum: 1, title: "Eval split", description: "Fraction of the dataset held out for evaluation", type: "number" },
};
const loraSchema = {
  ...sharedSchema,
  r: { default: 8, minimum: 1, maximum: 1024, title: "Rank (r)", description: "Rank of the update matrices", type: "integer" },
  target_modules: { anyOf: [{ items: { type: "string" }, type: "array" }, { type: "string" }], default: "all-linear", title: "Target modules" },
};

function method(name: string, title: string, properties: Record<string, unknown>, defaults: Record<string, unknown>): Schemas["MethodPublic"] {
  return {
    name, title, description: `${title} fine-tuning`, objectives: ["sft", "dpo"], peft: name !== "full", requires_cuda: false,
    params_schema: { type: "object", properties }, defaults,
  };
}

function objective(name: string, title: string, formats: string[], properties: Record<string, unknown> = {}): Schemas["ObjectivePublic"] {
  return {
    name, title, description: `${title}, described`, dataset_formats: formats, metric_keys: [], reports_perplexity: true,
    is_default: name === "sft", learning_rate_scale: 1, next_stage: null, params_schema: { type: "object", properties }, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {},
  };
}

const catalog: StudyCatalog = {
  objectives: [
    objective("sft", "Supervised fine-tuning", ["instruction"]),
    objective("dpo", "Direct preference optimisation (DPO)", ["preference"], {
      beta: { default: 0.1, exclusiveMinimum: 0, maximum: 10, title: "Beta", type: "number" },
    }),
  ],
  methods: [
    method("lora", "LoRA", loraSchema, { learning_rate: 0.0002, r: 8 }),
    { ...method("full", "Full", sharedSchema, { learning_rate: 0.001 }), objectives: ["sft"] },
    { ...method("qlora", "QLoRA", loraSchema, { learning_rate: 0.0002, r: 8 }), requires_cuda: true },
  ],
  models: [
    {
      name: "tunelab-tiny", title: "Tunelab tiny Llama (bundled)", description: "A tiny random Llama", available: true, how_to_get: null,
      path: null, source: "bundled", param_defaults: { lora: { learning_rate: 0.005 } },
    },
    {
      name: "smollm2", title: "SmolLM2-135M", description: "A small real model", available: false, how_to_get: "make models",
      path: null, source: "bundled", param_defaults: {},
    },
  ],
  datasets: [
    { id: 3, name: "alpaca-mini", format: "instruction", row_count: 200, bundled: true } as Dataset,
    { id: 8, name: "prefs", format: "preference", row_count: 50, bundled: false } as Dataset,
  ],
};

const queues: StudyQueue[] = [
  { name: "cpu", default: true, workers: 2, label: "cpu · 2 workers · default" },
  { name: "gpu", default: false, workers: 0, label: "gpu · no worker now" },
];

// The project's succeeded runs as GET /runs answers them; the external one has no weights here to start from.
const succeeded = [
  { id: 21, name: "sft-lora", status: "succeeded", external: false, objective: "sft", method: "lora", model: "smollm2" },
  { id: 22, name: "imported", status: "succeeded", external: true, objective: "sft", method: "full", model: "tunelab-tiny" },
] as unknown as Run[];

function StudyPageStub() {
  return <p>study page {useParams().studyId}</p>;
}

function renderForm() {
  renderInApp(<StudyForm catalog={catalog} queues={queues} projectId={7} />, {
    at: "/studies/new",
    path: "/studies/new",
    routes: <Route path="/studies/:studyId" element={<StudyPageStub />} />,
  });
}

type Api = { studies: unknown[]; runQueries: URLSearchParams[] };

/** Answers GET /runs with the project's succeeded runs and POST /studies with `answer`. */
function fakeApi(answer: (body: unknown) => Response): Api {
  const sent: Api = { studies: [], runQueries: [] };
  fakeNetwork(async (request) => {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/api/v1/runs") {
      sent.runQueries.push(url.searchParams);
      return json({ data: succeeded, count: succeeded.length, next_cursor: null });
    }
    if (request.method === "POST" && url.pathname === "/api/v1/studies") {
      const body = await request.json();
      sent.studies.push(body);
      return answer(body);
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
  });
  return sent;
}

const optionTexts = (select: HTMLElement) => within(select).getAllByRole("option").map((o) => o.textContent);

describe("StudyForm", () => {
  it("labels its fixed fields as the run launch form does: titles, availability, formats and row counts, queues", async () => {
    fakeApi(() => apiError(500, "UNEXPECTED", "no launch in this test"));
    renderForm();

    const objectiveField = screen.getByLabelText("Objective");
    expect(optionTexts(objectiveField)).toEqual(["Supervised fine-tuning", "Direct preference optimisation (DPO)"]);
    expect(objectiveField).toHaveAccessibleDescription("Supervised fine-tuning, described");
    const model = screen.getByLabelText("Base model");
    expect(optionTexts(model)).toEqual(["Tunelab tiny Llama (bundled)", "SmolLM2-135M (unavailable)"]);
    expect(within(model).getByRole("option", { name: "SmolLM2-135M (unavailable)" })).toBeDisabled();
    expect(model).toHaveAccessibleDescription(/^A tiny random Llama ?SmolLM2-135M is not on this server: get it with make models\.$/);
    expect(optionTexts(screen.getByLabelText("Dataset"))).toEqual(["alpaca-mini · instruction · 200 rows · bundled"]);
    expect(screen.getByLabelText("Dataset")).toHaveAttribute("name", "dataset_id");
    expect(optionTexts(screen.getByLabelText("Queue"))).toEqual(["cpu · 2 workers · default", "gpu · no worker now"]);
    expect(screen.getByLabelText("Queue")).toHaveValue("cpu");
    // Every method of the objective, a CUDA-only one said to be so.
    const methods = within(screen.getByTestId("study-methods"));
    expect(methods.getAllByRole("checkbox").map((c) => c.getAttribute("value"))).toEqual(["lora", "full", "qlora"]);
    expect(methods.getByLabelText("QLoRA (CUDA GPU queues only)")).toBeInTheDocument();

    // Another objective: its datasets, and the methods it has.
    await userEvent.selectOptions(objectiveField, "dpo");
    expect(optionTexts(screen.getByLabelText("Dataset"))).toEqual(["prefs · preference · 50 rows"]);
    expect(methods.getAllByRole("checkbox").map((c) => c.getAttribute("value"))).toEqual(["lora", "qlora"]);
  });

  it("takes the shared params' labels, help, bounds and defaults from the methods' schema", () => {
    fakeApi(() => apiError(500, "UNEXPECTED", "no launch in this test"));
    renderForm();

    const maxLength = screen.getByLabelText("Max length (tokens)");
    expect(maxLength).toHaveAttribute("name", "params.max_length");
    expect(maxLength).toHaveValue(256);
    expect(maxLength).toHaveAttribute("min", "8");
    expect(maxLength).toHaveAttribute("max", "131072");
    expect(maxLength).toHaveAccessibleDescription(/^Longest tokenized example; longer ones are truncated ?\(8–131072\)$/);
    expect(screen.getByLabelText("Batch size per device")).toHaveAttribute("name", "params.per_device_train_batch_size");
    expect(screen.getByLabelText("Batch size per device")).toHaveValue(8);
    expect(screen.getByLabelText("Eval split")).toHaveAttribute("name", "params.eval_split");
    expect(screen.getByLabelText("Eval split")).toHaveAccessibleDescription(/^Fraction of the dataset held out for evaluation ?\(≥ 0, < 1\)$/);
  });

  it("picks grid params from the picked methods' schema, shows their defaults and bounds, and launches in one request", async () => {
    const api = fakeApi(() => json({ study: { id: 12 } }, 201));
    renderForm();
    const user = userEvent.setup();

    const param = screen.getByLabelText("Param 1");
    expect(optionTexts(param)).toEqual(["— (pick methods first)"]);
    await user.type(screen.getByLabelText("Study name"), "ranks");
    await user.click(screen.getByLabelText("LoRA"));
    await user.click(screen.getByLabelText("Full"));
    // The union of the two methods' params, each with the methods that have it; never the budget, seed or eval split,
    // nor a list; batch-size-like params only with a budget in tokens.
    expect(optionTexts(param)).toEqual([
      "—",
      "Learning rate — lora, full",
      "Batch size per device — lora, full (needs a token budget)",
      "Max length (tokens) — lora, full (needs a token budget)",
      "Rank (r) — lora",
    ]);
    expect(within(param).getByRole("option", { name: /^Batch size per device/ })).toBeDisabled();

    await user.selectOptions(param, "r");
    const values = screen.getByLabelText("Values 1");
    expect(values).toHaveAttribute("placeholder", "default 8 · 1–1024");
    expect(values).toHaveAccessibleDescription("default 8 · 1–1024");
    expect(param).toHaveAccessibleDescription("Rank of the update matrices");
    await user.type(values, "4, 8");
    await user.selectOptions(screen.getByLabelText("Param 2"), "learning_rate");
    // The model's own default for LoRA beside full fine-tuning's.
    expect(screen.getByLabelText("Values 2")).toHaveAttribute("placeholder", "default 0.005 (lora), 0.001 (full) · > 0, ≤ 1");
    await user.type(screen.getByLabelText("Values 2"), "1e-3");
    await user.clear(screen.getByLabelText("Seeds"));
    await user.type(screen.getByLabelText("Seeds"), "1, 2");
    await user.clear(screen.getByLabelText("Max length (tokens)"));
    await user.type(screen.getByLabelText("Max length (tokens)"), "64");
    await user.selectOptions(screen.getByLabelText("Queue"), "gpu");
    // LoRA: 2 ranks × 1 rate × 2 seeds; full fine-tuning has no rank: 1 rate × 2 seeds.
    expect(screen.getByTestId("study-run-count")).toHaveTextContent("6 runs");
    await user.click(screen.getByRole("button", { name: "Launch 6 runs" }));

    expect(await screen.findByText("study page 12")).toBeInTheDocument();
    expect(api.studies).toEqual([
      {
        project_id: 7, name: "ranks", objective: "sft", model: "tunelab-tiny", dataset_id: 3, queue: "gpu", methods: ["lora", "full"],
        grid: { r: [4, 8], learning_rate: [0.001] }, seeds: [1, 2], budget: { max_steps: 20 },
        params: { max_length: 64, per_device_train_batch_size: 8, eval_split: 0.1 },
      },
    ]);
  });

  it("offers the objective's own params to the grid, had by every picked method", async () => {
    fakeApi(() => apiError(500, "UNEXPECTED", "no launch in this test"));
    renderForm();
    await userEvent.selectOptions(screen.getByLabelText("Objective"), "dpo");
    await userEvent.click(screen.getByLabelText("LoRA"));
    expect(optionTexts(screen.getByLabelText("Param 1"))[1]).toBe("Beta — lora");
  });

  it("varies a batch-size-like param only with a token budget, and then leaves it out of the shared params", async () => {
    const api = fakeApi(() => json({ study: { id: 13 } }, 201));
    renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("Study name"), "lengths");
    await user.click(screen.getByLabelText("LoRA"));
    await user.selectOptions(screen.getByLabelText("Budget in"), "train_tokens");
    const option = within(screen.getByLabelText("Param 1")).getByRole("option", { name: "Max length (tokens) — lora" });
    expect(option).toBeEnabled();
    await user.selectOptions(screen.getByLabelText("Param 1"), "max_length");
    await user.type(screen.getByLabelText("Values 1"), "64, 128");
    expect(screen.getByLabelText("Max length (tokens)")).toBeDisabled();
    expect(screen.getByLabelText("Max length (tokens)")).toHaveAccessibleDescription(/^Varied by the grid \(row 1\)/);
    await user.clear(screen.getByLabelText("Tokens per run"));
    await user.type(screen.getByLabelText("Tokens per run"), "20000");

    // Back to a budget in steps, the row is refused where it is; nothing is sent.
    await user.selectOptions(screen.getByLabelText("Budget in"), "max_steps");
    await user.click(screen.getByTestId("launch-study"));
    expect(screen.getByTestId("field-error-grid.0")).toHaveTextContent(
      "Max length (tokens) changes the tokens of a step: give the budget in training tokens to vary it",
    );
    expect(api.studies).toEqual([]);

    await user.selectOptions(screen.getByLabelText("Budget in"), "train_tokens");
    await user.click(screen.getByTestId("launch-study"));
    expect(await screen.findByText("study page 13")).toBeInTheDocument();
    expect(api.studies).toEqual([
      expect.objectContaining({
        grid: { max_length: [64, 128] }, budget: { train_tokens: 20000 }, params: { per_device_train_batch_size: 8, eval_split: 0.1 },
      }),
    ]);
  });

  it("refuses grid values outside the schema's bounds at their row, with focus on a summary of what to fix", async () => {
    const api = fakeApi(() => json({ study: { id: 14 } }, 201));
    renderForm();
    const user = userEvent.setup();
    await user.click(screen.getByTestId("launch-study"));

    const summary = await screen.findByTestId("study-error-summary");
    expect(summary).toHaveAttribute("role", "alert");
    expect(summary).toHaveTextContent("The study was not launched: 2 fields need attention · name: Give the study a name · methods: Pick at least one method");
    await waitFor(() => expect(summary.parentElement).toHaveFocus());
    expect(screen.getByTestId("field-error-methods")).toHaveTextContent("Pick at least one method");

    await user.type(screen.getByLabelText("Study name"), "too wide");
    await user.click(screen.getByLabelText("LoRA"));
    await user.selectOptions(screen.getByLabelText("Param 1"), "r");
    await user.type(screen.getByLabelText("Values 1"), "8, 4096");
    await user.click(screen.getByTestId("launch-study"));
    expect(screen.getByTestId("field-error-grid.0")).toHaveTextContent("4096 is out of bounds (1–1024)");
    expect(screen.getByLabelText("Values 1")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("study-error-summary")).toHaveTextContent(
      "The study was not launched: one field needs attention · grid row 1 (r): 4096 is out of bounds (1–1024)",
    );
    await waitFor(() => expect(screen.getByTestId("study-error-summary").parentElement).toHaveFocus());
    await user.click(within(screen.getByTestId("study-error-summary")).getByRole("link", { name: "grid row 1 (r)" }));
    expect(screen.getByLabelText("Values 1")).toHaveFocus();
    expect(api.studies).toEqual([]);

    // Typing in the row clears its error.
    await user.type(screen.getByLabelText("Values 1"), "x");
    expect(screen.queryByTestId("field-error-grid.0")).not.toBeInTheDocument();
  });

  it("shows the server's 422 at the grid row it names, and focuses the summary", async () => {
    const api = fakeApi(() =>
      apiError(422, "VALIDATION_ERROR", "grid.learning_rate: lora, learning_rate=0.9, seed 42: loss diverges", [
        { field: "grid.learning_rate", message: "loss diverges", method: "lora" },
      ]),
    );
    renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("Study name"), "bad rate");
    await user.click(screen.getByLabelText("LoRA"));
    await user.selectOptions(screen.getByLabelText("Param 2"), "learning_rate");
    await user.type(screen.getByLabelText("Values 2"), "1e-3, 0.9");
    await user.click(screen.getByRole("button", { name: "Launch 2 runs" }));

    await waitFor(() => expect(screen.getByTestId("field-error-grid.1")).toHaveTextContent("learning_rate=0.9"));
    const summary = screen.getByTestId("study-error-summary");
    expect(summary).toHaveTextContent("grid row 2 (learning_rate): lora, learning_rate=0.9, seed 42: loss diverges");
    await waitFor(() => expect(summary.parentElement).toHaveFocus());
    expect(api.studies).toHaveLength(1);
    expect(screen.queryByText(/study page/)).not.toBeInTheDocument();
  });

  it("shows a shared param's refusal at its field, by the name the browser tests fill", async () => {
    fakeApi(() =>
      apiError(422, "VALIDATION_ERROR", "params.eval_split: lora, seed 42: Input should be less than 1", [
        { field: "params.eval_split", message: "Input should be less than 1", method: "lora" },
      ]),
    );
    renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("Study name"), "split");
    await user.click(screen.getByLabelText("LoRA"));
    // The bounds are the API's to check: the form sends what was typed.
    await user.clear(screen.getByLabelText("Eval split"));
    await user.type(screen.getByLabelText("Eval split"), "5");
    await user.click(screen.getByTestId("launch-study"));
    expect(await screen.findByTestId("field-error-params.eval_split")).toHaveTextContent("eval_split");
    expect(screen.getByLabelText("Eval split")).toHaveAttribute("aria-invalid", "true");
  });

  it("starts every run from a succeeded run of the project: the model fixed to its own, base_run sent instead", async () => {
    const api = fakeApi(() => json({ study: { id: 15 } }, 201));
    renderForm();
    const user = userEvent.setup();

    const from = screen.getByLabelText("Start every run from");
    await waitFor(() => expect(optionTexts(from)).toEqual(["The base model's own weights", "#21 sft-lora · sft · lora · smollm2"]));
    expect(api.runQueries.map((q) => [q.get("project_id"), q.getAll("status"), q.get("limit")])).toEqual([["7", ["succeeded"], "100"]]);
    expect(screen.getByLabelText("Base model")).toBeEnabled();

    await user.selectOptions(from, "21");
    const model = screen.getByLabelText("Base model");
    expect(model).toBeDisabled();
    expect(model).toHaveValue("smollm2");
    expect(model).toHaveAccessibleDescription(/the runs start from run #21's trained weights/);
    expect(from).toHaveAccessibleDescription("Every run trains on top of run #21 sft-lora's trained weights and tokenizer.");

    await user.type(screen.getByLabelText("Study name"), "after sft");
    await user.click(screen.getByLabelText("LoRA"));
    await user.click(screen.getByTestId("launch-study"));
    expect(await screen.findByText("study page 15")).toBeInTheDocument();
    expect(api.studies).toHaveLength(1);
    expect(api.studies[0]).toMatchObject({ base_run: 21, methods: ["lora"] });
    expect(api.studies[0]).not.toHaveProperty("model");
  });
});
