// @vitest-environment jsdom
// The playground below a study: for an editor, the base and the first succeeded seed of each cell by default (more
// seeds by checkbox), sent as one POST /playground through the real client; a viewer gets none (it spends compute).
import "../test/canvas";
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { Run } from "../api/client";
import type { Me } from "../features/auth";
import { apiError, fakeNetwork, json } from "../test/network";
import { renderInApp } from "../test/render";
import { StudyPage } from "./StudyPage";

const value = (mean: number) => ({ mean, spread: 0, n: 1 });

function run(id: number, method: string, seed: number, status = "succeeded"): Run {
  return { id, name: `s · ${method} · ${seed}`, method, seed, status, project_id: 1, config: {} } as unknown as Run;
}

const detail = {
  study: {
    id: 5, project_id: 1, name: "seeds", created_by: null, created_at: "2026-12-01T00:00:00Z", run_count: 4,
    status_counts: { succeeded: 3, running: 1 },
    spec: { model: "tunelab-tiny", dataset_id: 1, objective: "sft", methods: ["lora", "ia3"], grid: {}, seeds: [1, 2], budget: { max_steps: 4 }, params: {} },
  },
  // lora's first seed still runs: its cell is its second seed.
  runs: [run(1, "lora", 1, "running"), run(2, "lora", 2), run(3, "ia3", 1), run(4, "ia3", 2)],
  cost_table: {
    columns: [{ key: "best_eval_loss", label: "Best eval loss", unit: "", better: "lower", ranked: true }],
    rows: [
      { cell: "lora", method: "lora", grid: {}, run_ids: [1, 2], finished_run_ids: [2], unfinished: ["run 1: running, step 2 of 4"], values: { best_eval_loss: value(1.2) }, best: [] },
      { cell: "ia3", method: "ia3", grid: {}, run_ids: [3, 4], finished_run_ids: [3, 4], unfinished: [], values: { best_eval_loss: value(1.4) }, best: [] },
    ],
    target_loss: 1.4,
    notes: [],
  },
};

function me(role: "editor" | "viewer"): Me {
  return {
    via: "session",
    user: { id: 1, email: "a@example.com", display_name: "A", is_admin: false, is_active: true, invite_pending: false, created_at: "2026-12-01T00:00:00Z", last_sign_in_at: null },
    projects: [{ project_id: 1, project_name: "p", role }],
  } as unknown as Me;
}

function fakeApi(): unknown[] {
  const asked: unknown[] = [];
  fakeNetwork(async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/api/v1/studies/5") return json(detail);
    if (request.method === "POST" && path === "/api/v1/metrics/query") return json({ data: [] });
    if (request.method === "POST" && path === "/api/v1/playground") {
      asked.push(await request.json());
      return json({ id: "r1", project_id: 1, events_url: "/api/v1/playground/r1/events", expected: null, prompt: "hi", slots: [] }, 202);
    }
    return apiError(404, "NOT_FOUND", `${request.method} ${path} is not faked`);
  });
  return asked;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("StudyPage's playground", () => {
  it("offers an editor the succeeded runs, one per cell chosen, and asks for the base and the chosen ones", async () => {
    const asked = fakeApi();
    vi.stubGlobal("EventSource", class { addEventListener() {} close() {} });
    renderInApp(<StudyPage />, { at: "/studies/5", path: "/studies/:studyId", me: me("editor") });
    const runs = await screen.findByTestId("study-playground-runs");
    const boxes = [...runs.querySelectorAll<HTMLInputElement>("input[type=checkbox]")];
    expect(boxes.map((box) => [box.value, box.checked])).toEqual([["2", true], ["3", true], ["4", false]]);

    await userEvent.click(screen.getByLabelText("ia3 · seed 2"));
    await userEvent.type(screen.getByTestId("playground-prompt"), "hi");
    await userEvent.click(screen.getByTestId("playground-generate"));
    await waitFor(() => expect(asked).toHaveLength(1));
    expect(asked[0]).toMatchObject({ project_id: 1, run_ids: [2, 3, 4], include_base: true, prompt: "hi" });
  });

  it("shows a viewer no playground", async () => {
    fakeApi();
    renderInApp(<StudyPage />, { at: "/studies/5", path: "/studies/:studyId", me: me("viewer") });
    await screen.findByTestId("study-cost-table");
    expect(screen.queryByTestId("study-playground")).not.toBeInTheDocument();
    expect(screen.queryByTestId("playground")).not.toBeInTheDocument();
  });
});
