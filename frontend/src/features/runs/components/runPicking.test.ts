import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { splitTags } from "./BulkActions";
import { scalarParamNames } from "./ColumnChooser";
import { mergeResults } from "./RunPicker";
import { bestValues } from "./RunsTable";

const run = (id: number, params: Record<string, unknown> = {}) => ({ id, config: { params } }) as unknown as Run;

describe("picking and tagging runs", () => {
  it("merges name and tag matches without repeats, newest first, up to the limit", () => {
    expect(mergeResults([run(1), run(3)], [run(3), run(2)]).map((r) => r.id)).toEqual([3, 2, 1]);
    expect(mergeResults([run(1), run(2), run(3)], [], 2).map((r) => r.id)).toEqual([3, 2]);
  });

  it("splits comma-separated tags, trimmed, without empties or repeats", () => {
    expect(splitTags(" a, b ,,a,  ")).toEqual(["a", "b"]);
    expect(splitTags("")).toEqual([]);
  });

  it("offers scalar params as columns, not lists or objects", () => {
    expect(scalarParamNames([run(1, { r: 8, target_modules: ["q"], packing: true }), run(2, { lr: 0.1, nested: {} })])).toEqual([
      "lr",
      "packing",
      "r",
    ]);
  });

  it("marks the best of each shown summary column: the lowest loss, the highest throughput", () => {
    const figures = (id: number, best_eval_loss: number | null, tokens_per_second: number | null, status = "succeeded") =>
      ({ ...run(id), status, best_eval_loss, tokens_per_second, wall_time_s: 10, started_at: null, finished_at: null }) as unknown as Run;
    const runs = [figures(1, 2.0, 100), figures(2, 1.5, 50), figures(3, null, 300)];
    const best = bestValues(runs, ["best_eval_loss", "tokens_per_second", "wall_time_s", "param.r"]);
    expect(Object.fromEntries(best)).toEqual({ best_eval_loss: 1.5, tokens_per_second: 300 });
    expect(bestValues(runs, ["latest_train_loss"]).size).toBe(0);
    expect(bestValues(runs.slice(0, 1), ["best_eval_loss"]).size).toBe(0);
  });

  it("crowns no unfinished run: a running run's early loss and a canceled run's speed are not results", () => {
    const figures = (id: number, best_eval_loss: number, tokens_per_second: number, status: string) =>
      ({ ...run(id), status, best_eval_loss, tokens_per_second, wall_time_s: 10, started_at: null, finished_at: null }) as unknown as Run;
    const runs = [figures(1, 2.0, 100, "succeeded"), figures(2, 1.8, 90, "succeeded"), figures(3, 0.5, 50, "running"), figures(4, 3.0, 900, "canceled")];
    expect(Object.fromEntries(bestValues(runs, ["best_eval_loss", "tokens_per_second"]))).toEqual({ best_eval_loss: 1.8, tokens_per_second: 100 });
    expect(bestValues([runs[0], runs[2], runs[3]], ["best_eval_loss"]).size).toBe(0); // one finished run: nothing to rank
  });

  it("ranks losses only among runs of one objective: a DPO loss is not a better SFT loss", () => {
    const figures = (id: number, objective: string, best_eval_loss: number, tokens_per_second: number) =>
      ({ ...run(id), objective, status: "succeeded", best_eval_loss, tokens_per_second, wall_time_s: 10, started_at: null, finished_at: null }) as unknown as Run;
    const mixed = [figures(1, "sft", 2.1, 100), figures(2, "dpo", 0.6, 90)];
    expect(Object.fromEntries(bestValues(mixed, ["best_eval_loss", "tokens_per_second", "min(eval/loss)"]))).toEqual({ tokens_per_second: 100 });
    const sft = [figures(1, "sft", 2.1, 100), figures(3, "sft", 1.9, 90)];
    expect(Object.fromEntries(bestValues(sft, ["best_eval_loss"]))).toEqual({ best_eval_loss: 1.9 });
  });
});
