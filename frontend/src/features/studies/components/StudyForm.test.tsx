// @vitest-environment jsdom
// The study form as a user meets it: methods from GET /methods, a grid and seeds that give the run count, one
// request through the real client, and a 422 at the field (or grid row) it names.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, useParams } from "react-router";
import { describe, expect, it } from "vitest";

import type { Dataset, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { StudyForm, type StudyCatalog } from "./StudyForm";

function method(name: string, title: string, params: string[]): Schemas["MethodPublic"] {
  const properties = Object.fromEntries(params.map((p) => [p, { type: "number" }]));
  return { name, title, description: title, objectives: ["sft"], peft: name !== "full", requires_cuda: false, params_schema: { type: "object", properties }, defaults: {} };
}

const catalog: StudyCatalog = {
  objectives: [
    {
      name: "sft", title: "SFT", description: "Supervised fine-tuning", dataset_formats: ["instruction"], metric_keys: [],
      reports_perplexity: true, learning_rate_scale: 1, params_schema: {}, defaults: {}, method_defaults: {},
    },
  ],
  methods: [
    method("lora", "LoRA", ["learning_rate", "r"]),
    method("full", "Full", ["learning_rate"]),
    { ...method("qlora", "QLoRA", ["r"]), requires_cuda: true },
  ],
  models: [
    { name: "tunelab-tiny", title: "Tunelab tiny", description: "tiny", available: true, how_to_get: null, path: null, source: "bundled", param_defaults: {} },
  ],
  datasets: [{ id: 3, name: "alpaca-mini", format: "instruction", row_count: 200, bundled: true } as Dataset],
};

function StudyPageStub() {
  return <p>study page {useParams().studyId}</p>;
}

function renderForm() {
  renderInApp(<StudyForm catalog={catalog} projectId={7} />, {
    at: "/studies/new",
    path: "/studies/new",
    routes: <Route path="/studies/:studyId" element={<StudyPageStub />} />,
  });
}

function fakeStudies(answer: (body: unknown) => Response): unknown[] {
  const sent: unknown[] = [];
  fakeNetwork(async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path === "/api/v1/studies") {
      const body = await request.json();
      sent.push(body);
      return answer(body);
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return sent;
}

describe("StudyForm", () => {
  it("offers the CPU methods, counts the runs of the grid and seeds, and launches them in one request", async () => {
    const sent = fakeStudies(() => json({ study: { id: 12 } }, 201));
    renderForm();
    expect(screen.queryByLabelText("QLoRA")).not.toBeInTheDocument();
    await userEvent.type(screen.getByLabelText("Study name"), "ranks");
    await userEvent.click(screen.getByLabelText("LoRA"));
    await userEvent.click(screen.getByLabelText("Full"));
    await userEvent.type(screen.getByLabelText("Param 1"), "r");
    const values = screen.getAllByLabelText("Values");
    await userEvent.type(values[0], "4, 8");
    await userEvent.clear(screen.getByLabelText("Seeds"));
    await userEvent.type(screen.getByLabelText("Seeds"), "1, 2");
    // LoRA: 2 ranks × 2 seeds; full fine-tuning has no rank: 2 seeds.
    expect(screen.getByTestId("study-run-count")).toHaveTextContent("6 runs");
    await userEvent.click(screen.getByRole("button", { name: "Launch 6 runs" }));
    expect(await screen.findByText("study page 12")).toBeInTheDocument();
    expect(sent).toEqual([
      expect.objectContaining({
        name: "ranks", project_id: 7, model: "tunelab-tiny", dataset_id: 3, methods: ["lora", "full"], grid: { r: [4, 8] },
        seeds: [1, 2], budget: { max_steps: 20 },
        params: { max_length: 128, per_device_train_batch_size: 4, eval_split: 0.2 },
      }),
    ]);
  });

  it("checks what it can before sending, and shows the server's 422 at the grid row it names", async () => {
    const sent = fakeStudies(() =>
      apiError(422, "VALIDATION_ERROR", "grid.learning_rate: lora, learning_rate=5, seed 42: Input should be less than or equal to 1", [
        { field: "grid.learning_rate", message: "Input should be less than or equal to 1", method: "lora" },
      ]),
    );
    renderForm();
    await userEvent.click(screen.getByRole("button", { name: /Launch/ }));
    expect(screen.getByTestId("field-error-methods")).toHaveTextContent("Pick at least one method");
    expect(screen.getByTestId("field-error-name")).toBeInTheDocument();
    expect(sent).toEqual([]);

    await userEvent.type(screen.getByLabelText("Study name"), "bad rate");
    await userEvent.click(screen.getByLabelText("LoRA"));
    await userEvent.type(screen.getByLabelText("Param 2"), "learning_rate");
    await userEvent.type(screen.getAllByLabelText("Values")[1], "1e-3, 5");
    await userEvent.click(screen.getByRole("button", { name: "Launch 2 runs" }));
    await waitFor(() => expect(screen.getByTestId("field-error-grid.1")).toHaveTextContent("learning_rate=5"));
    expect(sent).toHaveLength(1);
    expect(screen.queryByText(/study page/)).not.toBeInTheDocument();
  });
});
