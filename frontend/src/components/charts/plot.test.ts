import { describe, expect, it } from "vitest";

import {
  joinZoomGroup,
  MIN_Y_AXIS_SIZE,
  readValues,
  showsMarkers,
  yAxisSize,
  yRange,
  ZoomGroup,
  type XRange,
  type ZoomMember,
} from "./plot";

describe("legend read-out", () => {
  const data = [
    [1, 2, 3],
    [3.1, null, 1.195],
    [3.1, 2.9, 2.487],
  ];
  it("shows the logged latest value, and the smoothed one apart", () => {
    expect(readValues(data, [{ raw: 1, smoothed: 2 }], null)).toEqual([{ raw: 1.195, smoothed: 2.487 }]);
  });
  it("shows no smoothed value when smoothing is off", () => {
    expect(readValues(data, [{ raw: 1, smoothed: null }], null)).toEqual([{ raw: 1.195, smoothed: null }]);
  });
  it("reads the nearest logged value under the cursor", () => {
    expect(readValues(data, [{ raw: 1, smoothed: 2 }], 1)).toEqual([{ raw: 3.1, smoothed: 2.9 }]);
  });
});

describe("y axis size", () => {
  const sixPixelsPerChar = (text: string) => text.length * 6;
  it("fits the widest tick label whole", () => {
    const size = yAxisSize(["0.004", "0.00495", "0.005"], sixPixelsPerChar);
    expect(size).toBeGreaterThanOrEqual(7 * 6 + 15);
    expect(size).toBeGreaterThan(yAxisSize(["0.004", "0.005"], sixPixelsPerChar));
  });
  it("has a floor before labels exist and for short ones", () => {
    expect(yAxisSize(null, sixPixelsPerChar)).toBe(MIN_Y_AXIS_SIZE);
    expect(yAxisSize(["1", "2"], sixPixelsPerChar)).toBe(MIN_Y_AXIS_SIZE);
  });
});

describe("markers", () => {
  it("marks a series of one or a few points, not a dense one", () => {
    expect(showsMarkers([null, 1.2, null])).toBe(true);
    expect(showsMarkers([1, 2, 3])).toBe(true);
    expect(showsMarkers([1, 2, 3, 4])).toBe(false);
    expect(showsMarkers([null, null])).toBe(false);
  });
});

describe("y range", () => {
  it("spans a single value closely, not from zero", () => {
    const [lo, hi] = yRange(6.265, 6.265) as [number, number];
    expect(lo).toBeGreaterThan(5);
    expect(hi).toBeLessThan(7.5);
    expect(lo).toBeLessThan(6.265);
    expect(hi).toBeGreaterThan(6.265);
  });
  it("puts a single zero in the middle of a small span", () => {
    const [lo, hi] = yRange(0, 0) as [number, number];
    expect(lo).toBeLessThan(0);
    expect(hi).toBeGreaterThan(0);
    expect(hi - lo).toBeLessThan(5);
  });
  it("leaves a range of distinct values and no data to uPlot", () => {
    expect(yRange(437, 535)).toEqual([427, 545]);
    expect(yRange(null, null)).toEqual([null, null]);
  });
});

describe("zoom sync", () => {
  function chart(): ZoomMember & { shown: XRange[] } {
    const shown: XRange[] = [];
    return { shown, showX: (range) => shown.push(range) };
  }

  it("applies one chart's zoom and its reset to every other chart, not back to itself", () => {
    const group = new ZoomGroup();
    const [a, b, c] = [chart(), chart(), chart()];
    for (const member of [a, b, c]) group.join(member);
    group.zoom(a, { min: 10, max: 20 });
    group.zoom(b, null);
    expect(a.shown).toEqual([null]);
    expect(b.shown).toEqual([{ min: 10, max: 20 }]);
    expect(c.shown).toEqual([{ min: 10, max: 20 }, null]);
  });

  it("shows a chart that joins later the group's zoom, and forgets it once every chart has left", () => {
    const group = new ZoomGroup();
    const a = chart();
    const leaveA = group.join(a);
    group.zoom(a, { min: 3, max: 7 });
    const late = chart();
    const leaveLate = group.join(late);
    expect(late.shown).toEqual([{ min: 3, max: 7 }]);
    leaveA();
    leaveLate();
    const fresh = chart();
    group.join(fresh);
    expect(fresh.shown).toEqual([]);
    expect(group.current).toBeNull();
  });

  it("treats an empty range as a reset", () => {
    const group = new ZoomGroup();
    const [a, b] = [chart(), chart()];
    group.join(a);
    group.join(b);
    group.zoom(a, { min: 5, max: 5 });
    expect(b.shown).toEqual([null]);
  });

  it("keeps the groups of different keys apart, and drops a key's group with its last chart", () => {
    const [onRun, onOther] = [chart(), chart()];
    const run = joinZoomGroup("test-run:step", onRun);
    const other = joinZoomGroup("test-run:time", onOther);
    run.group.zoom(onRun, { min: 1, max: 2 });
    expect(onOther.shown).toEqual([]);
    expect(joinZoomGroup("test-run:step", chart()).group).toBe(run.group);
    run.leave();
    other.leave();
  });
});
