// The run page's lineage card: the runs a run builds on (nearest first) and the runs that started from it, as
// GET /runs/{id}/lineage gives them through the real client; no card for a run with neither.
import { screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import type { Run, Schemas } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { runKeys } from "../../runs";
import { lineageKeys, runLineageQueryOptions } from "../api/lineage";
import { LineageCard } from "./LineageCard";

type Lineage = Schemas["RunLineagePublic"];

const ref = (id: number, name: string, status: Run["status"], objective: string, method: string) => ({ id, name, status, objective, method });
const run = (fields: Partial<Run> = {}) => ({ id: 9, name: "sft-on-pretrain", status: "succeeded", base_run_id: null, ...fields }) as Run;

function fakeLineage(answer: Lineage | Response): string[] {
  const asked: string[] = [];
  fakeNetwork((request) => {
    const path = new URL(request.url).pathname;
    asked.push(`${request.method} ${path}`);
    return answer instanceof Response ? answer : json(answer);
  });
  return asked;
}

describe("LineageCard", () => {
  it("lists the runs it started from, nearest first, and the runs started from it, each linked with status and stage", async () => {
    const asked = fakeLineage({
      ancestors: [ref(4, "pretrain-full", "succeeded", "pretrain", "full"), ref(2, "pretrain-0", "succeeded", "pretrain", "full")],
      children: [ref(11, "dpo-lora", "running", "dpo", "lora")],
    });
    renderInApp(<LineageCard run={run({ base_run_id: 4 })} />);

    const card = await screen.findByTestId("lineage-card");
    expect(within(card).getByRole("heading", { name: "Lineage" })).toBeInTheDocument();
    const ancestors = within(screen.getByTestId("lineage-ancestors")).getAllByTestId("lineage-run");
    expect(ancestors.map((item) => item.textContent)).toEqual([
      "#4 pretrain-full succeeded pretrain · full",
      "#2 pretrain-0 succeeded pretrain · full",
    ]);
    expect(within(ancestors[0]).getByRole("link", { name: "#4 pretrain-full" })).toHaveAttribute("href", "/runs/4");
    const [child] = within(screen.getByTestId("lineage-children")).getAllByTestId("lineage-run");
    expect(child).toHaveTextContent("#11 dpo-lora running dpo · lora");
    expect(within(child).getByRole("link", { name: "#11 dpo-lora" })).toHaveAttribute("href", "/runs/11");
    expect(within(child).getByTestId("status-badge")).toHaveClass("badge-running");
    expect(asked).toEqual(["GET /api/v1/runs/9/lineage"]);
  });

  it("names the runs without links where the page may not link them", async () => {
    fakeLineage({ ancestors: [], children: [ref(11, "dpo-lora", "succeeded", "dpo", "lora")] });
    renderInApp(<LineageCard run={run()} linkRuns={false} />);

    const card = await screen.findByTestId("lineage-card");
    expect(within(card).getByText("#11 dpo-lora")).toBeInTheDocument();
    expect(within(card).queryByRole("link")).not.toBeInTheDocument();
    expect(screen.queryByTestId("lineage-ancestors")).not.toBeInTheDocument();
  });

  it("renders nothing for a run with no parent and no children", async () => {
    fakeLineage({ ancestors: [], children: [] });
    const { container, queryClient } = renderInApp(<LineageCard run={run()} />);

    await waitFor(() => expect(queryClient.getQueryState(lineageKeys.run(9))?.status).toBe("success"));
    expect(container).toBeEmptyDOMElement();
  });

  it("refreshes when the runs change (a launch from this run), and polls while a run started from it trains", async () => {
    let lineage: Lineage = { ancestors: [], children: [] };
    fakeNetwork(() => json(lineage));
    const { queryClient } = renderInApp(<LineageCard run={run()} />);
    await waitFor(() => expect(queryClient.getQueryState(lineageKeys.run(9))?.status).toBe("success"));

    lineage = { ancestors: [], children: [ref(11, "dpo-lora", "queued", "dpo", "lora")] };
    await queryClient.invalidateQueries({ queryKey: runKeys.all });
    expect(await screen.findByTestId("lineage-children")).toHaveTextContent("#11 dpo-lora queued dpo · lora");

    const interval = runLineageQueryOptions(9).refetchInterval as (query: { state: { data?: Lineage } }) => number | false;
    expect(interval({ state: { data: lineage } })).toBeGreaterThan(0);
    expect(interval({ state: { data: { ancestors: [], children: [{ ...lineage.children[0], status: "succeeded" }] } } })).toBe(false);
  });

  it("tells of a parent the lineage leaves out (a share link that does not reach it)", async () => {
    fakeLineage({ ancestors: [], children: [] });
    renderInApp(<LineageCard run={run({ base_run_id: 4 })} linkRuns={false} />);

    const [parent] = within(await screen.findByTestId("lineage-ancestors")).getAllByTestId("lineage-run");
    expect(parent).toHaveTextContent("#4 (not shown here)");
  });

  it("shows a failed read for a run with a parent", async () => {
    fakeLineage(apiError(500, "UNEXPECTED", "lineage unavailable"));
    renderInApp(<LineageCard run={run({ base_run_id: 4 })} />);

    expect(await screen.findByRole("alert")).toHaveTextContent("lineage unavailable");
    expect(screen.getByTestId("lineage-card")).toBeInTheDocument();
  });
});
