import { describe, expect, it } from "vitest";

import {
  DEFAULT_COLUMNS,
  DEFAULT_VIEW,
  addFilter,
  columnsOf,
  compareHref,
  isFiltered,
  parseRunsView,
  removeFilter,
  runsExportHref,
  runsFilter,
  runsViewParams,
  toggleColumn,
  toggleSort,
} from "./runsView";

describe("runs view in the URL", () => {
  it("round-trips filters and sort", () => {
    const view = { status: ["queued", "running"] as const, method: "lora", model: "tunelab-tiny", q: "lr", tags: [], params: [], metrics: [], sort: "name", order: "asc" } as const;
    const params = runsViewParams({ ...view, status: [...view.status], tags: [], params: [], metrics: [] });
    expect(params.toString()).toBe("status=queued%2Crunning&method=lora&model=tunelab-tiny&q=lr&sort=name&order=asc");
    expect(parseRunsView(params)).toEqual({ ...view, status: ["queued", "running"], tags: [], params: [], metrics: [] });
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

  it("keeps tag, param and metric filters and the chosen columns in the URL", () => {
    const view = {
      ...DEFAULT_VIEW,
      tags: ["baseline", "lr sweep"],
      params: ["r:16", "learning_rate>0.0001"],
      metrics: ["eval/loss<2"],
      columns: ["best_eval_loss", "param.r"] as const,
    };
    const params = runsViewParams({ ...view, columns: [...view.columns] });
    expect(params.getAll("tag")).toEqual(["baseline", "lr sweep"]);
    expect(params.getAll("param")).toEqual(["r:16", "learning_rate>0.0001"]);
    expect(params.get("metric")).toBe("eval/loss<2");
    expect(params.get("cols")).toBe("best_eval_loss,param.r");
    const reloaded = parseRunsView(new URLSearchParams(params.toString()));
    expect(reloaded).toEqual({ ...view, columns: ["best_eval_loss", "param.r"] });
    expect(isFiltered(reloaded)).toBe(true);
    expect(runsFilter(reloaded, undefined, 50)).toMatchObject({
      tag: ["baseline", "lr sweep"],
      param: ["r:16", "learning_rate>0.0001"],
      metric: ["eval/loss<2"],
    });
  });

  it("drops empty and repeated filters, unknown columns, and the default columns from the URL", () => {
    const view = parseRunsView(new URLSearchParams("tag=a&tag=%20&tag=a&param=&metric=x%3C1&cols=bogus,param.r,param.1x,wall_time_s"));
    expect([view.tags, view.params, view.metrics, view.columns]).toEqual([["a"], [], ["x<1"], ["param.r", "wall_time_s"]]);
    expect(parseRunsView(new URLSearchParams("")).columns).toBeUndefined();
    expect(runsViewParams({ ...DEFAULT_VIEW, columns: [...DEFAULT_COLUMNS] }).toString()).toBe("");
  });

  it("adds and removes filters without duplicates", () => {
    const tagged = addFilter(addFilter(DEFAULT_VIEW, "tag", " best "), "tag", "best");
    expect(tagged.tags).toEqual(["best"]);
    expect(addFilter(DEFAULT_VIEW, "metric", "  ")).toBe(DEFAULT_VIEW);
    expect(removeFilter(addFilter(tagged, "param", "r:8"), "tag", "best")).toEqual({ ...DEFAULT_VIEW, params: ["r:8"] });
  });

  it("toggles columns, summary figures in table order and params last", () => {
    const view = toggleColumn(toggleColumn(DEFAULT_VIEW, "param.r", true), "final_eval_loss", true);
    expect(columnsOf(view)).toEqual([
      "latest_train_loss", "best_eval_loss", "final_eval_loss", "trainable_percent", "peak_memory_bytes", "tokens_per_second", "wall_time_s", "param.r",
    ]);
    expect(columnsOf(toggleColumn(view, "latest_train_loss", false))[0]).toBe("best_eval_loss");
  });

  it("exports every run the view's filters match", () => {
    const view = { ...DEFAULT_VIEW, status: ["succeeded" as const], tags: ["a b"], metrics: ["eval/loss<2"], sort: "name" as const };
    const href = runsExportHref(view, 7, "csv");
    expect(href.startsWith("/api/v1/runs/export?")).toBe(true);
    const params = new URLSearchParams(href.split("?")[1]);
    expect([...params.entries()]).toEqual([
      ["project_id", "7"], ["status", "succeeded"], ["tag", "a b"], ["metric", "eval/loss<2"], ["format", "csv"],
    ]);
  });
});
