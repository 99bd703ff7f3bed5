// @vitest-environment jsdom
// The Pareto chart draws its frontier the way its quality is better, and a lone point (one cell, or cells that tie)
// inside its axes rather than on their ends.
import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { renderInApp } from "../../../test/render";
import { ParetoChart } from "./ParetoChart";

const p = (label: string, x: number, y: number) => ({ label, x, y, color: "#000" });

describe("ParetoChart", () => {
  it("draws a lone point in the middle of both axes, not on their ends", () => {
    renderInApp(<ParetoChart title="ROUGE-L vs trainable %" unit="%" log quality="ROUGE-L" better="higher" points={[p("lora", 0.5, 0.8)]} />);
    const point = screen.getByTestId("pareto-chart").querySelector("circle[data-label='lora']");
    // The plot spans x 52–308 and y 12–184 (PAD in ParetoChart.tsx).
    expect(Number(point?.getAttribute("cx"))).toBeCloseTo(180);
    expect(Number(point?.getAttribute("cy"))).toBeCloseTo(98);
  });

  it("keeps the higher scores on the frontier when higher is better", () => {
    const points = [p("full", 100, 0.9), p("lora", 1, 0.7), p("ia3", 0.1, 0.4), p("worse", 50, 0.6)];
    renderInApp(<ParetoChart title="ROUGE-L vs trainable %" unit="%" log quality="ROUGE-L" better="higher" points={points} />);
    const chart = screen.getByTestId("pareto-chart");
    // Read as a loss, only ia3 would be on it.
    expect(chart).toHaveAttribute("data-frontier", "3");
    expect(chart.querySelector("svg")).toHaveAttribute("aria-label", "ROUGE-L vs trainable %: ROUGE-L (higher is better) against %");
    expect(chart.querySelector("circle[data-label='full'] title")).toHaveTextContent("full: ROUGE-L 0.9, 100 %");
  });
});
