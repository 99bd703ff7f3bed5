import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";

import {
  DEFAULT_COLUMNS,
  DEFAULT_VIEW,
  SUMMARY_COLUMNS,
  MAX_METRIC_KEYS,
  addFilter,
  columnsOf,
  compareHref,
  isColumnId,
  isFiltered,
  metricBetter,
  metricValue,
  parseMetricColumn,
  parseRunsView,
  removeFilter,
  runsExportHref,
  runsFilter,
  runsViewParams,
  summaryValue,
  toggleColumn,
  toggleSort,
} from "./runsView";
import type { ColumnId, RunsView, SummaryColumnId } from "./runsView";

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

  it("offers the run started from and the scores as columns, kept in the URL, none of them sorted (the server sorts)", () => {
    const cols = "base_run_id,rouge_l,exact_match,bleu,reward_accuracy";
    const view = parseRunsView(new URLSearchParams(`cols=${cols}`));
    expect(view.columns).toEqual(cols.split(","));
    expect(runsViewParams(view).get("cols")).toBe(cols);
    const added = SUMMARY_COLUMNS.filter((c) => cols.split(",").includes(c.id));
    expect(added.map((c) => c.label)).toEqual(["From run", "ROUGE-L", "Exact match", "BLEU", "Reward acc."]);
    expect(added.filter((c) => "sort" in c)).toEqual([]);
    // Higher scores are better; a lineage is no figure to rank.
    expect(added.map((c) => ("best" in c ? c.best : null))).toEqual([null, "max", "max", "max", "max"]);
  });

  it("places the run started from first and the scores after the losses", () => {
    const view = ["reward_accuracy", "rouge_l", "base_run_id"].reduce((v, c) => toggleColumn(v, c as ColumnId, true), DEFAULT_VIEW);
    expect(columnsOf(view)).toEqual([
      "base_run_id", "latest_train_loss", "best_eval_loss", "rouge_l", "reward_accuracy", "trainable_percent", "peak_memory_bytes", "tokens_per_second",
      "wall_time_s",
    ]);
  });

  it("reads the tuned model's generation scores, the reward accuracy and the run started from", () => {
    const run = {
      base_run_id: 4,
      reward_accuracy: 0.75,
      generation_eval: {
        rows_requested: 20,
        base: { rouge_l: 0.1, exact_match: 0, bleu: 2, rows: 20 },
        tuned: { rouge_l: 0.42, exact_match: 0.25, bleu: 17.5, rows: 20 },
      },
    } as unknown as Run;
    expect(["rouge_l", "exact_match", "bleu", "reward_accuracy", "base_run_id"].map((id) => summaryValue(run, id as SummaryColumnId))).toEqual([
      0.42, 0.25, 17.5, 0.75, 4,
    ]);
    // A run not evaluated by generation (or not yet), or with no tuned scores, has none.
    const bare = { base_run_id: null } as unknown as Run;
    expect(["rouge_l", "bleu", "reward_accuracy", "base_run_id"].map((id) => summaryValue(bare, id as SummaryColumnId))).toEqual([null, null, null, null]);
    const untuned = { generation_eval: { rows_requested: 20, base: null, tuned: null } } as unknown as Run;
    expect(summaryValue(untuned, "exact_match")).toBeNull();
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

describe("logged-metric columns", () => {
  it("are written as the metric filter writes an aggregate, and round-trip through the URL", () => {
    const cols = "best_eval_loss,param.r,last(eval/loss),min(eval/loss),max(train/grad_norm),last(eval/rouge_l)";
    const view = parseRunsView(new URLSearchParams({ cols }));
    expect(view.columns).toEqual(cols.split(","));
    expect(runsViewParams(view).get("cols")).toBe(cols);
    expect(parseRunsView(runsViewParams(view))).toEqual(view);
    expect(parseMetricColumn("min(eval/loss)")).toEqual({ aggregate: "min", key: "eval/loss" });
    expect(parseMetricColumn("param.r")).toBeNull();
  });

  it("take the metric filter's key characters and the three aggregates only", () => {
    for (const ok of ["last(eval/loss)", "min(a.b-c_d/E9)", "max(system/gpu_memory_bytes)"]) expect(isColumnId(ok), ok).toBe(true);
    for (const bad of ["mean(eval/loss)", "last()", "last(eval loss)", "last(eval/loss", "min(eval/loss))", "last(a,b)", "eval/loss"]) {
      expect(isColumnId(bad), bad).toBe(false);
    }
    expect(parseRunsView(new URLSearchParams("cols=avg(eval/loss),last(eval/loss),last(eval/loss)")).columns).toEqual(["last(eval/loss)"]);
  });

  it("go after the summary figures and params, in the order they were added", () => {
    const added: ColumnId[] = ["min(eval/loss)", "param.r", "last(eval/loss)", "final_eval_loss"];
    const view = added.reduce((v: RunsView, c) => toggleColumn(v, c, true), { ...DEFAULT_VIEW, columns: ["best_eval_loss"] });
    expect(columnsOf(view)).toEqual(["best_eval_loss", "final_eval_loss", "param.r", "min(eval/loss)", "last(eval/loss)"]);
    expect(columnsOf(toggleColumn(view, "min(eval/loss)", false))).toEqual(["best_eval_loss", "final_eval_loss", "param.r", "last(eval/loss)"]);
  });

  it("ask the list for each key once, sorted, and not at all without metric columns", () => {
    const view = { ...DEFAULT_VIEW, columns: ["best_eval_loss", "min(eval/loss)", "last(eval/accuracy)", "max(eval/loss)"] as ColumnId[] };
    expect(runsFilter(view, undefined, 50).metric_column).toEqual(["eval/accuracy", "eval/loss"]);
    expect(runsFilter(DEFAULT_VIEW, undefined, 50).metric_column).toBeUndefined();
  });

  it("hold at most as many keys as one list request answers", () => {
    const keys = Array.from({ length: MAX_METRIC_KEYS + 2 }, (_, i) => `k${i}`);
    const parsed = parseRunsView(new URLSearchParams({ cols: [...keys.map((k) => `last(${k})`), "min(k0)"].join(",") }));
    expect(parsed.columns).toHaveLength(MAX_METRIC_KEYS + 1);
    expect(parsed.columns).toContain("min(k0)");
    expect(parsed.columns).not.toContain(`last(k${MAX_METRIC_KEYS})`);
    // A new key past the limit is not added; another aggregate of a shown key is.
    expect(toggleColumn(parsed, "last(another)", true)).toBe(parsed);
    expect(columnsOf(toggleColumn(parsed, "max(k1)", true))).toContain("max(k1)");
    expect(runsFilter(parsed, undefined, 50).metric_column).toHaveLength(MAX_METRIC_KEYS);
  });

  it("read the run's aggregate of the key, null where it has not logged it", () => {
    const run = { metric_columns: { "eval/loss": { last: 1.5, last_step: 40, min: 1.2, max: 3 } } } as unknown as Run;
    expect(["last(eval/loss)", "min(eval/loss)", "max(eval/loss)"].map((c) => metricValue(run, c as never))).toEqual([1.5, 1.2, 3]);
    expect(metricValue(run, "last(eval/accuracy)")).toBeNull();
    expect(metricValue({} as Run, "last(eval/loss)")).toBeNull();
  });

  it("are ranked only where the metric's better end is known", () => {
    const better = (keys: string[]) => keys.map(metricBetter);
    expect(better(["eval/loss", "train/loss", "train/mean_loss", "eval/perplexity"])).toEqual(["min", "min", "min", "min"]);
    const higher = ["eval/accuracy", "eval/rewards/accuracies", "eval/rouge_l", "eval/rougeLsum", "eval/bleu", "eval/exact_match", "train/reward", "eval/rewards/margins"];
    expect(better(higher)).toEqual(higher.map(() => "max"));
    // Neither end is a better result: a gradient norm, a learning rate, a reward's spread or the rejected answer's reward.
    const unranked = ["train/grad_norm", "train/learning_rate", "train/reward_std", "eval/rewards/rejected", "system/cpu_percent", "eval/loss_scale"];
    expect(better(unranked)).toEqual(unranked.map(() => undefined));
  });
});

describe("grouping in the URL", () => {
  it("round-trips every field and a param, leaving the ungrouped page's URL plain", () => {
    for (const group of ["study", "method", "objective", "model", "dataset", "tag", "param.learning_rate"] as const) {
      const params = runsViewParams({ ...DEFAULT_VIEW, group });
      expect(params.toString()).toBe(`group=${group}`);
      expect(parseRunsView(params)).toEqual({ ...DEFAULT_VIEW, group });
    }
    expect(runsViewParams(DEFAULT_VIEW).has("group")).toBe(false);
    expect(parseRunsView(new URLSearchParams("")).group).toBeUndefined();
    // No filter: the list asks for the same runs, and the export has them all.
    const grouped = parseRunsView(new URLSearchParams("group=method"));
    expect(isFiltered(grouped)).toBe(false);
    expect(runsFilter(grouped, undefined, 50)).toEqual(runsFilter(DEFAULT_VIEW, undefined, 50));
    expect(runsExportHref(grouped, 1, "csv")).toBe(runsExportHref(DEFAULT_VIEW, 1, "csv"));
  });

  it("ignores a field it cannot group by", () => {
    for (const junk of ["status", "param.", "param.1x", "", "Method"]) {
      expect(parseRunsView(new URLSearchParams({ group: junk })).group, junk).toBeUndefined();
    }
  });
});
