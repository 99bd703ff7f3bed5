import { describe, expect, it } from "vitest";

import { axisRange, paretoFrontier } from "./pareto";

describe("paretoFrontier", () => {
  it("keeps the points that no other beats on both costs, by x", () => {
    const p = (label: string, x: number, y: number) => ({ label, x, y, color: "#000" });
    const frontier = paretoFrontier([p("full", 100, 1.0), p("lora", 1, 1.4), p("ia3", 0.1, 2.0), p("worse", 50, 1.5)]);
    expect(frontier.map((point) => point.label)).toEqual(["ia3", "lora", "full"]);
  });
});

describe("axisRange", () => {
  it("spans the values, and pads one value (one cell, or a tie) so the axis' two ends differ", () => {
    expect(axisRange([1, 3, 2], false)).toEqual([1, 3]);
    expect(axisRange([2, 2], false)).toEqual([1.8, 2.2]);
    expect(axisRange([0], false)).toEqual([-1, 1]);
    expect(axisRange([0.5], true)).toEqual([0.25, 1]);
  });
});
