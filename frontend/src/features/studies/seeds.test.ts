import { describe, expect, it } from "vitest";

import type { Series } from "../../lib/series";
import { meanOverSeeds, meanSeriesOverSeeds, studySeriesSets } from "./seeds";

function series(key: string, step: number[], value: (number | null)[], wall_time: number[]): Series {
  return { key, downsampled: false, step, value, wall_time, min: null, max: null };
}

describe("meanOverSeeds", () => {
  it("averages the seeds at each step and spans their lowest and highest value", () => {
    const mean = meanOverSeeds("eval/loss", [
      { series: series("eval/loss", [2, 4], [3, 1], [100, 110]), origin: 100 },
      { series: series("eval/loss", [2, 4], [2, 2], [500, 530]), origin: 500 },
      { series: series("eval/loss", [2, 4], [4, 0], [900, 920]), origin: 900 },
    ]);
    expect(mean?.step).toEqual([2, 4]);
    expect(mean?.value).toEqual([3, 1]);
    expect(mean?.min).toEqual([2, 0]);
    expect(mean?.max).toEqual([4, 2]);
    // Seconds since each seed's first point, averaged: (10 + 30 + 20) / 3.
    expect(mean?.wall_time).toEqual([0, 20]);
  });

  it("takes a step some seeds skipped from those that logged it, and leaves a gap where none has a value", () => {
    const mean = meanOverSeeds("train/loss", [
      { series: series("train/loss", [1, 2, 3], [1, null, 5], [0, 1, 2]), origin: 0 },
      { series: series("train/loss", [1, 3], [3, 7], [0, 2]), origin: 0 },
    ]);
    expect(mean?.step).toEqual([1, 2, 3]);
    expect(mean?.value).toEqual([2, null, 6]);
    expect(mean?.min).toEqual([1, null, 5]);
    expect(mean?.max).toEqual([3, null, 7]);
  });

  it("is nothing when no seed logged the key", () => {
    expect(meanOverSeeds("eval/loss", [])).toBeNull();
    expect(meanOverSeeds("eval/loss", [{ series: series("eval/loss", [], [], []), origin: null }])).toBeNull();
  });
});

describe("meanSeriesOverSeeds", () => {
  it("averages every key, each seed's times from its own first point", () => {
    const out = meanSeriesOverSeeds([
      { "train/loss": series("train/loss", [1, 2], [2, 1], [1000, 1004]), "train/tokens_seen": series("train/tokens_seen", [1, 2], [64, 128], [1000, 1004]) },
      { "train/loss": series("train/loss", [1, 2], [4, 3], [50, 52]) },
    ]);
    expect(Object.keys(out).sort()).toEqual(["train/loss", "train/tokens_seen"]);
    expect(out["train/loss"].value).toEqual([3, 2]);
    expect(out["train/loss"].wall_time).toEqual([0, 3]);
    expect(out["train/tokens_seen"].value).toEqual([64, 128]);
  });
});

describe("studySeriesSets", () => {
  const loss = (values: number[]) => ({ "eval/loss": series("eval/loss", [1, 2], values, [0, 1]) });
  it("draws a cell of one seed as its run and a cell of several as thin seeds and a bold mean in their band", () => {
    const sets = studySeriesSets([
      { runId: 1, seed: 1, cell: "lora", color: "hsl(210 65% 42%)", series: loss([2, 1]), finished: true },
      { runId: 2, seed: 2, cell: "lora", color: "hsl(210 65% 42%)", series: loss([4, 3]), finished: true },
      { runId: 3, seed: 1, cell: "ia3", color: "hsl(0 65% 42%)", series: loss([5, 5]), finished: true },
    ]);
    expect(sets.map((s) => [s.label, s.width, s.band])).toEqual([
      ["lora · seed 1", 1, undefined],
      ["lora · seed 2", 1, undefined],
      ["lora · mean of 2 seeds", 2.5, true],
      ["ia3 · seed 1", undefined, undefined],
    ]);
    const mean = sets[2];
    expect(mean.runId).toBeLessThan(0);
    expect(mean.color).toBe("hsl(210 65% 42%)");
    expect(sets[0].color).toBe("hsl(210 65% 42% / 0.45)");
    expect(mean.series["eval/loss"].value).toEqual([3, 2]);
    expect(mean.series["eval/loss"].min).toEqual([2, 1]);
    expect(mean.series["eval/loss"].max).toEqual([4, 3]);
    expect(sets[3].color).toBe("hsl(0 65% 42%)");
  });

  it("averages only the seeds that finished, says how many of the cell's seeds that is, and draws no mean of none", () => {
    const sets = studySeriesSets([
      { runId: 1, seed: 1, cell: "lora", color: "hsl(210 65% 42%)", series: loss([6, 5]), finished: true },
      // Running: its only eval is the untrained step 0, far above where the finished seed got.
      { runId: 2, seed: 2, cell: "lora", color: "hsl(210 65% 42%)", series: { "eval/loss": series("eval/loss", [0], [6.3], [0]) }, finished: false },
      { runId: 3, seed: 1, cell: "ia3", color: "hsl(0 65% 42%)", series: loss([5, 5]), finished: false },
      { runId: 4, seed: 2, cell: "ia3", color: "hsl(0 65% 42%)", series: loss([6, 6]), finished: false },
    ]);
    expect(sets.map((s) => s.label)).toEqual(["lora · seed 1", "lora · seed 2", "lora · mean of 1 of 2 seeds", "ia3 · seed 1", "ia3 · seed 2"]);
    expect(sets[2].series["eval/loss"].value).toEqual([6, 5]);
  });
});
