// The new-run page reached from a run: `?base_run=ID` continues from that run's weights in its project, a run that
// did not succeed is refused before any form, and a clone of a continued run starts from the same run.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, useParams } from "react-router";
import { describe, expect, it } from "vitest";

import type { Run, Schemas } from "../api/client";
import type { Me } from "../features/auth";
import { apiError, fakeNetwork, json } from "../test/network";
import { renderInApp } from "../test/render";
import { NewRunPage } from "./NewRunPage";

// The next stages the registry declares, as GET /methods publishes them.
const NEXT_STAGES: Record<string, string> = { pretrain: "sft", sft: "dpo" };
const objective = (name: string, dataset_formats: string[]): Schemas["ObjectivePublic"] => ({
  name, title: name.toUpperCase(), description: "", dataset_formats, metric_keys: [], reports_perplexity: name !== "dpo",
  is_default: name === "sft", learning_rate_scale: 1, next_stage: NEXT_STAGES[name] ?? null, params_schema: {}, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {},
});
const methods = {
  objectives: [objective("sft", ["instruction"]), objective("dpo", ["preference"])],
  methods: [
    { name: "lora", title: "LoRA", description: "", objectives: ["sft", "dpo"], peft: true, requires_cuda: false, defaults: {}, params_schema: { type: "object", properties: {} } },
  ],
};
const models = {
  data: [{ name: "tunelab-tiny", title: "Tiny", description: "", available: true, how_to_get: null, path: null, source: "bundled", param_defaults: {} }],
};
const datasets = [
  { id: 3, name: "alpaca-mini", format: "instruction", row_count: 200, bundled: true },
  { id: 8, name: "prefs", format: "preference", row_count: 50, bundled: true },
];

const run = (fields: Partial<Run>) =>
  ({
    id: 12, name: "sft-lora", project_id: 7, status: "succeeded", external: false, objective: "sft", method: "lora", model: "tunelab-tiny",
    queue: "cpu", dataset_id: 3, base_run_id: null, config: { params: {} }, ...fields,
  }) as Run;

// An editor in two projects; the top bar's project (the first) is not the run's.
const me = {
  via: "session",
  user: { id: 1, email: "a@example.com", display_name: "A", is_admin: false, is_active: true, invite_pending: false, created_at: "2026-12-01T00:00:00Z", last_sign_in_at: null },
  projects: [
    { project_id: 1, project_name: "default", role: "editor" },
    { project_id: 7, project_name: "research", role: "editor" },
  ],
} as unknown as Me;

type Sent = { method: string; path: string; query: string; body: unknown };

function fakeApi(runs: Run[]): Sent[] {
  const sent: Sent[] = [];
  fakeNetwork(async (request) => {
    const url = new URL(request.url);
    const path = url.pathname;
    const body = request.method === "GET" ? null : await request.json();
    sent.push({ method: request.method, path, query: url.search, body });
    const asked = runs.find((r) => path === `/api/v1/runs/${r.id}`);
    if (request.method === "GET" && asked) return json(asked);
    if (path === "/api/v1/methods") return json(methods);
    if (path === "/api/v1/models") return json(models);
    if (path === "/api/v1/queues") return json({ data: [{ name: "cpu", default: true, workers: 1 }] });
    if (path === "/api/v1/datasets") return json({ data: datasets, count: datasets.length, next_cursor: null });
    if (path === "/api/v1/estimates") return apiError(422, "VALIDATION_ERROR", "no estimate in this test");
    if (request.method === "POST" && path === "/api/v1/runs") return json({ id: 50 }, 201);
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return sent;
}

function RunPageStub() {
  return <p>run page {useParams().runId}</p>;
}

function renderPage(at: string) {
  return renderInApp(<NewRunPage />, { at, path: "/runs/new", me, routes: <Route path="/runs/:runId" element={<RunPageStub />} /> });
}

const launchBody = (sent: Sent[]) => sent.find((s) => s.method === "POST" && s.path === "/api/v1/runs")?.body;

describe("NewRunPage from a run", () => {
  it("continues from a succeeded run in its project, on its weights", async () => {
    const sent = fakeApi([run({})]);
    renderPage("/runs/new?base_run=12");

    expect(await screen.findByTestId("base-run-notice")).toHaveTextContent("Starts from run #12 sft-lora");
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("Continue from sft-lora in research");
    expect(screen.getByLabelText("Objective")).toHaveValue("dpo");
    expect(sent.filter((s) => s.path === "/api/v1/datasets").map((s) => new URLSearchParams(s.query).get("project_id"))).toEqual(["7"]);

    await userEvent.click(screen.getByRole("button", { name: "Launch run" }));
    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(launchBody(sent)).toMatchObject({ base_run: 12, project_id: 7, objective: "dpo", dataset: 8 });
  });

  it("refuses a run that did not succeed, with no form", async () => {
    const sent = fakeApi([run({ status: "failed" })]);
    const { queryClient } = renderPage("/runs/new?base_run=12");

    const refusal = await screen.findByTestId("base-run-refused");
    expect(refusal).toHaveTextContent("Run #12 sft-lora is failed: only a succeeded run's trained weights can be started from.");
    expect(within(refusal).getByRole("link", { name: "Back to the run" })).toHaveAttribute("href", "/runs/12");
    // The catalog arrives, and still no form.
    await waitFor(() => expect(sent.some((s) => s.path === "/api/v1/datasets")).toBe(true));
    await waitFor(() => expect(queryClient.isFetching()).toBe(0));
    expect(screen.queryByRole("button", { name: "Launch run" })).not.toBeInTheDocument();
    expect(screen.queryByText(/Loading/)).not.toBeInTheDocument();
  });

  it("clones a continued run onto the same run's weights", async () => {
    const sent = fakeApi([run({}), run({ id: 20, name: "dpo-lora", objective: "dpo", dataset_id: 8, base_run_id: 12 })]);
    renderPage("/runs/new?clone=20");

    expect(await screen.findByTestId("base-run-notice")).toHaveTextContent("Starts from run #12 sft-lora");
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("New run from dpo-lora");
    expect(screen.getByLabelText("Name")).toHaveValue("dpo-lora (clone)");

    await userEvent.click(screen.getByRole("button", { name: "Launch run" }));
    expect(await screen.findByText("run page 50")).toBeInTheDocument();
    expect(launchBody(sent)).toMatchObject({ base_run: 12, project_id: 7, objective: "dpo", dataset: 8 });
  });

  it("shows why a run to continue from cannot be read", async () => {
    fakeApi([]);
    renderPage("/runs/new?base_run=99");
    expect(await screen.findByRole("alert")).toHaveTextContent("GET /api/v1/runs/99 is not faked");
    expect(screen.queryByRole("button", { name: "Launch run" })).not.toBeInTheDocument();
  });
});
