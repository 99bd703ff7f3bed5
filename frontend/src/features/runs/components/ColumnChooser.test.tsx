// The column chooser lists the summary figures, the scores and the lineage column in their own groups, and the
// project's logged metrics (GET /metric-keys) with their last, min and max; ticking one adds it to the view.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { ColumnChooser } from "./ColumnChooser";
import { DEFAULT_VIEW, columnsOf } from "./runsView";
import type { RunsView } from "./runsView";

/** Answers GET /metric-keys with these keys; returns the query strings it was asked with. */
function fakeMetricKeys(keys: string[]): string[] {
  const asked: string[] = [];
  fakeNetwork((request) => {
    const url = new URL(request.url);
    if (request.method !== "GET" || url.pathname !== "/api/v1/metric-keys") return apiError(404, "NOT_FOUND", `${request.method} ${url.pathname} is not faked`);
    asked.push(url.search);
    return json({ data: keys });
  });
  return asked;
}

describe("ColumnChooser", () => {
  it("groups the scores and the run started from apart from the summary, and adds the one ticked", async () => {
    fakeMetricKeys([]);
    const onChange = vi.fn<(view: RunsView) => void>();
    renderInApp(<ColumnChooser view={DEFAULT_VIEW} onChange={onChange} runs={[]} projectId={1} />);

    const group = (legend: string) => within(screen.getByRole("group", { name: legend })).getAllByRole("checkbox").map((box) => box.parentElement?.textContent);
    expect(group("Scores")).toEqual(["ROUGE-L", "Exact match", "BLEU", "Reward acc."]);
    expect(group("Lineage")).toEqual(["From run"]);
    expect(group("Summary")).toContain("Eval");
    expect(group("Summary")).not.toContain("BLEU");

    await userEvent.click(screen.getByTestId("column-base_run_id"));
    expect(columnsOf(onChange.mock.calls[0][0])[0]).toBe("base_run_id");
  });

  it("offers the last, min and max of each metric the project's runs logged, system metrics folded away", async () => {
    const asked = fakeMetricKeys(["eval/loss", "eval/rouge_l", "train/loss", "weird key!", "system/cpu_percent", "system/rss_bytes"]);
    const onChange = vi.fn<(view: RunsView) => void>();
    const view: RunsView = { ...DEFAULT_VIEW, columns: ["best_eval_loss", "last(eval/loss)"] };
    renderInApp(<ColumnChooser view={view} onChange={onChange} runs={[]} projectId={3} />);

    const logged = screen.getByRole("group", { name: "Logged metrics" });
    expect(await within(logged).findByLabelText("eval/rouge_l (min)")).not.toBeChecked();
    expect(asked).toEqual(["?project_id=3"]);
    expect(within(logged).getByLabelText("eval/loss (min)")).not.toBeChecked();
    expect(within(logged).getByLabelText("eval/loss (last)")).toBeChecked();
    const rows = within(logged).getAllByTestId("metric-key");
    // A key the column syntax cannot hold is not offered.
    expect(rows.map((row) => row.firstChild?.textContent)).toEqual(["eval/loss", "eval/rouge_l", "train/loss", "system/cpu_percent", "system/rss_bytes"]);
    expect(within(rows[1]).getAllByRole("checkbox").map((box) => box.getAttribute("aria-label"))).toEqual([
      "eval/rouge_l (last)", "eval/rouge_l (min)", "eval/rouge_l (max)",
    ]);
    expect(within(rows[1]).getAllByRole("checkbox").map((box) => box.parentElement?.textContent)).toEqual(["last", "min", "max"]);
    const system = screen.getByTestId("system-metric-keys");
    expect(system).not.toHaveAttribute("open");
    expect(within(system).getByLabelText("system/cpu_percent (max)")).toBeInTheDocument();

    await userEvent.click(within(logged).getByLabelText("eval/loss (min)"));
    expect(columnsOf(onChange.mock.calls[0][0])).toEqual(["best_eval_loss", "last(eval/loss)", "min(eval/loss)"]);
    await userEvent.click(within(logged).getByLabelText("eval/loss (last)"));
    expect(columnsOf(onChange.mock.calls[1][0])).toEqual(["best_eval_loss"]);
  });

  it("keeps a shown metric column listed while the project's keys load or after none logs it", async () => {
    fakeMetricKeys([]);
    const view: RunsView = { ...DEFAULT_VIEW, columns: ["max(eval/accuracy)"] };
    renderInApp(<ColumnChooser view={view} onChange={() => {}} runs={[]} projectId={1} />);
    expect(screen.getByLabelText("eval/accuracy (max)")).toBeChecked();
    await waitFor(() => expect(screen.getAllByTestId("metric-key")).toHaveLength(1));
  });
});
