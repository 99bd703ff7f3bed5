import { describe, expect, it } from "vitest";

import {
  alignSeries,
  countPoints,
  ema,
  firstWallTime,
  mergeLivePoints,
  mergePoints,
  relativeTime,
  runColor,
  tokensAtSteps,
  xValues,
  type LivePoint,
  type Series,
} from "./series";

function series(steps: number[], values: (number | null)[], downsampled = false): Series {
  return {
    key: "train/loss",
    downsampled,
    step: steps,
    value: values,
    wall_time: steps.map((s) => 1000 + s),
    min: downsampled ? values.slice() : null,
    max: downsampled ? values.slice() : null,
  };
}

function point(step: number, value: number | null, key = "train/loss"): LivePoint {
  return { key, step, value, wall_time: 1000 + step };
}

describe("ema", () => {
  it("returns a copy of the values at weight 0", () => {
    const values = [1, 2, null, 3];
    const out = ema(values, 0);
    expect(out).toEqual(values);
    expect(out).not.toBe(values);
  });

  it("is debiased: a constant series stays constant from the first point", () => {
    expect(ema([5, 5, 5, 5], 0.9)).toEqual([5, 5, 5, 5].map(() => expect.closeTo(5, 10)));
  });

  it("matches the TensorBoard formula", () => {
    const w = 0.6;
    const values = [1, 3, 2];
    let last = 0;
    const expected = values.map((v, i) => {
      last = last * w + (1 - w) * v;
      return last / (1 - w ** (i + 1));
    });
    const out = ema(values, w);
    out.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 12));
    expect(out[0]).toBeCloseTo(1, 12);
  });

  it("skips nulls and non-finite values without advancing the average", () => {
    const withGap = ema([1, null, 3, Number.NaN, 2], 0.5);
    const without = ema([1, 3, 2], 0.5);
    expect(withGap[1]).toBeNull();
    expect(withGap[3]).toBeNull();
    expect(withGap[0]).toBeCloseTo(without[0]!, 12);
    expect(withGap[2]).toBeCloseTo(without[1]!, 12);
    expect(withGap[4]).toBeCloseTo(without[2]!, 12);
  });

  it("smooths more with a higher weight, and stays in range at 0.99", () => {
    const noisy = Array.from({ length: 200 }, (_, i) => (i % 2 ? 1 : 0));
    const light = ema(noisy, 0.3);
    const heavy = ema(noisy, 0.99);
    const spread = (xs: (number | null)[]) => Math.abs(xs[199]! - xs[198]!);
    expect(spread(heavy)).toBeLessThan(spread(light));
    for (const v of heavy) {
      expect(v!).toBeGreaterThanOrEqual(0);
      expect(v!).toBeLessThanOrEqual(1);
    }
  });
});

describe("mergePoints", () => {
  it("appends points after the last step", () => {
    const base = series([1, 2, 3], [1, 2, 3]);
    const out = mergePoints(base, [point(4, 4), point(5, 5)]);
    expect(out.step).toEqual([1, 2, 3, 4, 5]);
    expect(out.value).toEqual([1, 2, 3, 4, 5]);
    expect(base.step).toEqual([1, 2, 3]);
  });

  it("replaces a point at a step already present", () => {
    const out = mergePoints(series([1, 2, 3], [1, 2, 3]), [point(2, 20)]);
    expect(out.step).toEqual([1, 2, 3]);
    expect(out.value).toEqual([1, 20, 3]);
  });

  it("returns the same series when a replayed point changes nothing", () => {
    const base = series([1, 2, 3], [1, 2, 3]);
    expect(mergePoints(base, [point(2, 2), point(3, 3)])).toBe(base);
    expect(mergePoints(base, [])).toBe(base);
  });

  it("keeps step order for unordered input and lets the last of duplicates win", () => {
    const out = mergePoints(series([1, 2], [1, 2]), [point(5, 5), point(3, 3), point(5, 50), point(4, 4)]);
    expect(out.step).toEqual([1, 2, 3, 4, 5]);
    expect(out.value).toEqual([1, 2, 3, 4, 50]);
  });

  it("inserts a missing step into a complete series", () => {
    const out = mergePoints(series([1, 3], [1, 3]), [point(2, 2)]);
    expect(out.step).toEqual([1, 2, 3]);
  });

  it("drops a replayed point that falls inside a downsampled bucket, but appends new ones with their band", () => {
    const base = series([10, 20, 30], [1, 2, 3], true);
    const out = mergePoints(base, [point(5, 9), point(15, 9), point(20, 2.5), point(31, 4)]);
    expect(out.step).toEqual([10, 20, 30, 31]);
    expect(out.value).toEqual([1, 2.5, 3, 4]);
    expect(out.min).toEqual([1, 2.5, 3, 4]);
    expect(out.max).toEqual([1, 2.5, 3, 4]);
  });

  it("keeps a null (non-finite) live value as a gap", () => {
    const out = mergePoints(series([1], [1]), [point(2, null)]);
    expect(out.value).toEqual([1, null]);
  });

  it("merges a batch of mixed keys, creating series for new keys", () => {
    const out = mergeLivePoints({ "train/loss": series([1], [1]) }, [
      point(2, 2),
      point(2, 0.1, "eval/loss"),
    ]);
    expect(out["train/loss"].step).toEqual([1, 2]);
    expect(out["eval/loss"].step).toEqual([2]);
    expect(out["eval/loss"].downsampled).toBe(false);
  });
});

describe("x axes", () => {
  it("measures relative time from the run's first point over all series", () => {
    const a = { wall_time: [105, 110] };
    const b = { wall_time: [100, 120] };
    expect(firstWallTime([a, b])).toBe(100);
    expect(firstWallTime([])).toBeNull();
    expect(relativeTime([100, 112.5], 100)).toEqual([0, 12.5]);
  });

  it("maps steps to tokens seen, interpolating between and holding after", () => {
    const tokens = { step: [10, 20, 30], value: [1000, 2000, 4000] };
    expect(tokensAtSteps([0, 5, 10, 15, 30, 35], tokens)).toEqual([0, 500, 1000, 1500, 4000, 4000]);
    expect(tokensAtSteps([25, 12], tokens)).toEqual([3000, 1200]);
    expect(tokensAtSteps([1, 2], undefined)).toBeNull();
    expect(tokensAtSteps([1, 2], { step: [1], value: [null as unknown as number] })).toBeNull();
  });

  it("chooses the axis", () => {
    const s = { step: [1, 2], wall_time: [50, 60] };
    expect(xValues(s, "step", { origin: null })).toEqual([1, 2]);
    expect(xValues(s, "time", { origin: 40 })).toEqual([10, 20]);
    expect(xValues(s, "time", { origin: null })).toBeNull();
    expect(xValues(s, "tokens", { origin: 40, tokens: { step: [2], value: [64] } })).toEqual([32, 64]);
  });
});

describe("alignSeries", () => {
  it("puts series on the union of their x values with gaps", () => {
    const out = alignSeries([
      { x: [1, 2, 4], y: [10, 20, 40] },
      { x: [2, 3], y: [200, 300], min: [190, 290], max: [210, 310] },
    ]);
    expect(out.x).toEqual([1, 2, 3, 4]);
    expect(out.ys).toEqual([
      [10, 20, null, 40],
      [null, 200, 300, null],
    ]);
    expect(out.mins).toEqual([null, [null, 190, 290, null]]);
    expect(out.maxs[1]).toEqual([null, 210, 310, null]);
  });

  it("keeps the last point of a repeated x", () => {
    const out = alignSeries([{ x: [1, 1, 2], y: [5, 6, 7] }]);
    expect(out.x).toEqual([1, 2]);
    expect(out.ys[0]).toEqual([6, 7]);
  });

  it("counts the drawn points", () => {
    expect(countPoints([1, null, 2])).toBe(2);
  });
});

describe("runColor", () => {
  it("is stable per run and differs between neighbours", () => {
    expect(runColor(3)).toBe(runColor(3));
    expect(runColor(3)).not.toBe(runColor(4));
  });
});
