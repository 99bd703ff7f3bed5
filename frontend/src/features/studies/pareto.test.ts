import { describe, expect, it } from "vitest";

import { axisRange } from "../../lib/axis";
import { paretoFrontier } from "./pareto";

describe("paretoFrontier", () => {
  it("keeps the points that no other beats on both costs, by x", () => {
    const p = (label: string, x: number, y: number) => ({ label, x, y, color: "#000" });
    const frontier = paretoFrontier([p("full", 100, 1.0), p("lora", 1, 1.4), p("ia3", 0.1, 2.0), p("worse", 50, 1.5)]);
    expect(frontier.map((point) => point.label)).toEqual(["ia3", "lora", "full"]);
  });

  it("keeps the higher scores when higher is better (ROUGE-L against trainable %)", () => {
    const p = (label: string, x: number, y: number) => ({ label, x, y, color: "#000" });
    const points = [p("full", 100, 0.9), p("lora", 1, 0.7), p("ia3", 0.1, 0.4), p("worse", 50, 0.6), p("tie", 1, 0.5)];
    expect(paretoFrontier(points, "higher").map((point) => point.label)).toEqual(["ia3", "lora", "full"]);
    // Read as a loss, the same points keep the lowest instead.
    expect(paretoFrontier(points).map((point) => point.label)).toEqual(["ia3"]);
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
