import { describe, expect, it } from "vitest";

import { DEFAULT_VIEW, compareHref, parseRunsView, runsFilter, runsViewParams, toggleSort } from "./runsView";

describe("runs view in the URL", () => {
  it("round-trips filters and sort", () => {
    const view = { status: ["queued", "running"] as const, method: "lora", model: "tunelab-tiny", q: "lr", sort: "name", order: "asc" } as const;
    const params = runsViewParams({ ...view, status: [...view.status] });
    expect(params.toString()).toBe("status=queued%2Crunning&method=lora&model=tunelab-tiny&q=lr&sort=name&order=asc");
    expect(parseRunsView(params)).toEqual({ ...view, status: ["queued", "running"] });
  });

  it("keeps the plain page's URL plain and ignores junk", () => {
    expect(runsViewParams(DEFAULT_VIEW).toString()).toBe("");
    expect(parseRunsView(new URLSearchParams("status=bogus,failed&sort=drop&order=up&q=%20"))).toEqual({
      ...DEFAULT_VIEW,
      status: ["failed"],
    });
  });

  it("builds the list query without empty filters", () => {
    expect(runsFilter(DEFAULT_VIEW, undefined, 50)).toEqual({
      status: undefined,
      method: undefined,
      model: undefined,
      q: undefined,
      sort: "queued_at",
      order: "desc",
      limit: 50,
      cursor: undefined,
    });
  });

  it("toggles sort per column", () => {
    const byName = toggleSort(DEFAULT_VIEW, "name");
    expect([byName.sort, byName.order]).toEqual(["name", "asc"]);
    expect(toggleSort(byName, "name").order).toBe("desc");
    expect(toggleSort(byName, "tokens_per_second").order).toBe("desc");
  });

  it("links at most 20 selected runs to the compare page", () => {
    expect(compareHref(new Set([3, 1, 2]))).toBe("/compare?runs=1,2,3");
    expect(compareHref(Array.from({ length: 25 }, (_, i) => i + 1)).split(",")).toHaveLength(20);
  });
});
