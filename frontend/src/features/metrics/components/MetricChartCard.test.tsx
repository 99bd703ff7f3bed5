// A metric's chart card: its title and key, one legend item per run that logged the metric, and the empty states
// (nothing logged yet; nothing placeable on the tokens axis) with the exports disabled.
import "../../../test/canvas";

import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import type { Series } from "../../../lib/series";
import type { RunSeriesSet } from "../chartData";
import type { ChartControlsState } from "../controls";
import { MetricChartCard } from "./MetricChartCard";

const controls: ChartControlsState = { smoothing: 0, logY: false, xKind: "step" };

function series(key: string, step: number[], value: number[]): Series {
  return { key, downsampled: false, step, value, wall_time: step.map((s) => 1_700_000_000 + s), min: null, max: null };
}

function run(runId: number, label: string, list: Series[]): RunSeriesSet {
  return { runId, label, color: `#00000${runId}`, series: Object.fromEntries(list.map((s) => [s.key, s])) };
}

describe("MetricChartCard", () => {
  it("titles the chart and shows a legend item for each run that logged the metric", () => {
    const runs = [
      run(1, "lora-r8", [series("train/loss", [1, 2, 3], [2.4, 2.0, 1.7])]),
      run(2, "full", [series("train/loss", [1, 2], [2.6, 2.1])]),
      run(3, "no-loss-yet", [series("eval/loss", [3], [2.2])]),
    ];
    render(<MetricChartCard metricKey="train/loss" runs={runs} controls={controls} />);

    expect(screen.getByRole("heading", { name: "Train loss" })).toBeInTheDocument();
    expect(screen.getByText("train/loss · x: step")).toBeInTheDocument();
    const chart = screen.getByTestId("chart-train/loss");
    expect(within(chart).getByText("lora-r8")).toBeInTheDocument();
    expect(within(chart).getByText("full")).toBeInTheDocument();
    expect(within(chart).queryByText("no-loss-yet")).not.toBeInTheDocument();
    expect(chart).toHaveAttribute("data-points", "5");
    expect(screen.queryByText("No data yet")).not.toBeInTheDocument();
    expect(screen.getByRole("button", { name: "CSV" })).toBeEnabled();
  });

  it("says when nothing is logged yet, keeps the chart mounted and disables the exports", () => {
    render(<MetricChartCard metricKey="eval/loss" runs={[run(1, "fresh", [])]} controls={controls} />);

    expect(screen.getByRole("heading", { name: "Eval loss" })).toBeInTheDocument();
    expect(screen.getByText("No data yet")).toBeInTheDocument();
    expect(screen.getByTestId("chart-eval/loss")).toHaveAttribute("data-series", "0");
    expect(screen.getByRole("button", { name: "CSV" })).toBeDisabled();
    expect(screen.getByRole("button", { name: "PNG" })).toBeDisabled();
  });

  it("on the tokens axis, names the runs that logged no token counts", () => {
    const runs = [
      run(1, "with-tokens", [series("train/loss", [1, 2], [2.4, 2.0]), series("train/tokens_seen", [1, 2], [512, 1024])]),
      run(2, "without-tokens", [series("train/loss", [1, 2], [2.5, 2.1])]),
    ];
    const { rerender } = render(<MetricChartCard metricKey="train/loss" runs={runs.slice(1)} controls={{ ...controls, xKind: "tokens" }} />);
    expect(screen.getByText("No token counts logged for this axis")).toBeInTheDocument();

    rerender(<MetricChartCard metricKey="train/loss" runs={runs} controls={{ ...controls, xKind: "tokens" }} />);
    expect(screen.getByText("Not shown on this axis (no train/tokens_seen): without-tokens")).toBeInTheDocument();
    expect(within(screen.getByTestId("chart-train/loss")).getByText("with-tokens")).toBeInTheDocument();
  });
});
