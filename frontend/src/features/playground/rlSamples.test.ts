import { describe, expect, it } from "vitest";

import type { RlSample } from "./api/queries";
import { formatReward, groupByStep, rewardColumns } from "./rlSamples";

const sample = (step: number, split: RlSample["split"], rewards: RlSample["rewards"], extra: Partial<RlSample> = {}): RlSample => ({
  step, split, prompt: `prompt ${step}`, completion: `completion ${step}`, expected: null, rewards, reward: 0, advantage: null, ...extra,
});

describe("rewardColumns", () => {
  it("gives a column to each reward some row carries, in the order they first appear", () => {
    const rows = [
      sample(4, "eval", { reward_model: 0.5 }),
      sample(4, "eval", { reward_model: null, format: 1 }),
      sample(2, "eval", { exact_match: 0, reward_model: 0.1 }),
    ];
    expect(rewardColumns(rows)).toEqual(["reward_model", "format", "exact_match"]);
    expect(rewardColumns([])).toEqual([]);
  });
});

describe("groupByStep", () => {
  it("groups the rows by step and split, newest step first, keeping each group's order", () => {
    const rows = [
      sample(2, "train", {}, { completion: "a" }),
      sample(6, "eval", {}, { completion: "b" }),
      sample(2, "train", {}, { completion: "c" }),
      sample(6, "eval", {}, { completion: "d" }),
      sample(4, "eval", {}, { completion: "e" }),
    ];
    const groups = groupByStep(rows);
    expect(groups.map((g) => [g.step, g.split, g.rows.map((r) => r.completion)])).toEqual([
      [6, "eval", ["b", "d"]],
      [4, "eval", ["e"]],
      [2, "train", ["a", "c"]],
    ]);
  });

  it("keeps a step's eval and train samples apart", () => {
    const groups = groupByStep([sample(3, "eval", {}), sample(3, "train", {})]);
    expect(groups.map((g) => [g.step, g.split])).toEqual([[3, "eval"], [3, "train"]]);
  });
});

describe("formatReward", () => {
  it("shows three decimals, and a dash for a reward not recorded", () => {
    expect(formatReward(0.75)).toBe("0.750");
    expect(formatReward(-1.2)).toBe("-1.200");
    expect(formatReward(null)).toBe("—");
    expect(formatReward(undefined)).toBe("—");
  });
});
