// Grouping the runs of a page and the mean ± sample standard deviation over each group's succeeded runs.
import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { NO_VALUE, formatGroupFigure, groupFigure, groupHeading, groupRuns, meanAndSpread } from "./groups";
import type { RunGroup } from "./groups";

function run(id: number, fields: Partial<Run> = {}, params: Record<string, unknown> = {}): Run {
  return {
    id, name: `run-${id}`, status: "succeeded", method: "lora", objective: "sft", model: "tiny", dataset_id: null, study_id: null, tags: [],
    config: { params }, best_eval_loss: null, ...fields,
  } as unknown as Run;
}

const ids = (group: RunGroup) => group.runs.map((r) => r.id);

describe("groupRuns", () => {
  it("groups by a field of the run, keeping the page's order of runs in each group", () => {
    const runs = [run(1, { method: "lora" }), run(2, { method: "ia3" }), run(3, { method: "lora", status: "running" })];
    const groups = groupRuns(runs, "method");
    expect(groups.map((g) => [g.label, ids(g), g.succeeded])).toEqual([
      ["ia3", [2], 1],
      ["lora", [1, 3], 1],
    ]);
  });

  it("puts a run with several tags under each tag, and a run without any under (none), last", () => {
    const runs = [run(1, { tags: ["sweep", "baseline"] }), run(2, { tags: [] }), run(3, { tags: ["sweep"] })];
    expect(groupRuns(runs, "tag").map((g) => [g.label, ids(g)])).toEqual([
      ["baseline", [1]],
      ["sweep", [1, 3]],
      [NO_VALUE, [2]],
    ]);
  });

  it("orders numeric params by value, not as text, and groups a run without the param as (none)", () => {
    const runs = [run(1, {}, { r: 16 }), run(2, {}, { r: 4 }), run(3, {}, {}), run(4, {}, { r: 8 }), run(5, {}, { r: 16 })];
    expect(groupRuns(runs, "param.r").map((g) => [g.label, ids(g)])).toEqual([
      ["4", [2]],
      ["8", [4]],
      ["16", [1, 5]],
      [NO_VALUE, [3]],
    ]);
    // 16 and "16" are different values of a param.
    expect(groupRuns([run(1, {}, { r: 16 }), run(2, {}, { r: "16" })], "param.r")).toHaveLength(2);
  });

  it("groups studies and datasets by id, naming a dataset by its name", () => {
    const runs = [run(1, { study_id: 10 }), run(2, { study_id: 9 }), run(3, { study_id: null })];
    expect(groupRuns(runs, "study").map((g) => g.label)).toEqual(["#9", "#10", NO_VALUE]);
    const names = new Map([[1, "alpaca"], [2, "alpaca"]]);
    const byDataset = groupRuns([run(1, { dataset_id: 1 }), run(2, { dataset_id: 2 }), run(3, { dataset_id: 3 })], "dataset", names);
    expect(byDataset.map((g) => [g.label, ids(g)])).toEqual([
      ["#3", [3]],
      ["alpaca", [1]],
      ["alpaca", [2]],
    ]);
  });

  it("heads a group with its field, value, runs and succeeded runs", () => {
    const [group] = groupRuns([run(1), run(2), run(3), run(4, { status: "failed" })], "method");
    expect(groupHeading("method", group)).toBe("method: lora · 4 runs (3 succeeded)");
    const [param] = groupRuns([run(1, {}, { r: 16 })], "param.r");
    expect(groupHeading("param.r", param)).toBe("r: 16 · 1 run (1 succeeded)");
  });
});

describe("group figures", () => {
  it("takes the mean and the sample standard deviation (n − 1)", () => {
    const figure = meanAndSpread([1, 2, 3, 4]);
    expect(figure?.mean).toBe(2.5);
    expect(figure?.spread).toBeCloseTo(Math.sqrt(5 / 3), 12);
    expect(figure?.n).toBe(4);
    expect(meanAndSpread([2, 4])).toEqual({ mean: 3, spread: Math.SQRT2, n: 2 });
  });

  it("has a spread of 0 for one value and no figure for none", () => {
    expect(meanAndSpread([1.5])).toEqual({ mean: 1.5, spread: 0, n: 1 });
    expect(meanAndSpread([])).toBeNull();
    expect(meanAndSpread([Number.NaN])).toBeNull();
  });

  it("averages the succeeded runs only: a running, failed or canceled run's figure is no result", () => {
    const runs = [
      run(1, { best_eval_loss: 1.0 }),
      run(2, { best_eval_loss: 1.2 }),
      run(3, { best_eval_loss: 0.1, status: "running" }),
      run(4, { best_eval_loss: 0.2, status: "failed" }),
      run(5, { best_eval_loss: 0.3, status: "canceled" }),
    ];
    const [group] = groupRuns(runs, "method");
    const figure = groupFigure(group, (r) => r.best_eval_loss);
    expect(figure?.n).toBe(2);
    expect(figure?.mean).toBeCloseTo(1.1, 12);
    expect(figure?.spread).toBeCloseTo(Math.sqrt(0.02), 12);
    expect(formatGroupFigure(figure, group.runs.length, (v) => v.toFixed(3))).toBe("1.100 ± 0.141 (2 of 5)");
  });

  it("leaves out a succeeded run without the figure, and has none when no run succeeded", () => {
    const [group] = groupRuns([run(1, { best_eval_loss: 2 }), run(2, { best_eval_loss: null })], "method");
    expect(groupFigure(group, (r) => r.best_eval_loss)).toEqual({ mean: 2, spread: 0, n: 1 });
    const [unfinished] = groupRuns([run(1, { best_eval_loss: 2, status: "running" })], "method");
    expect(groupFigure(unfinished, (r) => r.best_eval_loss)).toBeNull();
    expect(formatGroupFigure(null, 1, String)).toBe("—");
  });

  it("shows one run's figure without ±, and no (n of m) when every run counted", () => {
    const format = (v: number) => v.toFixed(2);
    expect(formatGroupFigure({ mean: 1.5, spread: 0, n: 1 }, 1, format)).toBe("1.50");
    expect(formatGroupFigure({ mean: 1.5, spread: 0, n: 1 }, 3, format)).toBe("1.50 (1 of 3)");
    expect(formatGroupFigure({ mean: 1.5, spread: 0.25, n: 2 }, 2, format)).toBe("1.50 ± 0.25");
  });
});
