// The chart in a DOM: its legend (the logged latest value apart from the smoothed one), the figures its root carries
// for tests and tools, and one uPlot per shape, new data going through setData. The canvas is a stub (test/canvas.ts).
import "../../test/canvas";

import { render, screen, waitFor, within } from "@testing-library/react";
import type uPlot from "uplot";
import { describe, expect, it, vi } from "vitest";

import { ema } from "../../lib/series";
import { LineChart, type ChartSeries } from "./LineChart";

const x = [1, 2, 3, 4];
const train: ChartSeries = { label: "run-a", color: "#1f77b4", values: [2.5, 1.9, 1.4, null] };
const other: ChartSeries = { label: "run-b", color: "#ff7f0e", values: [2.2, null, 1.1, 0.9] };

function legendItem(label: string): HTMLElement {
  return screen.getByText(label).closest(".chart-legend-item") as HTMLElement;
}

describe("LineChart", () => {
  it("shows one legend item per series with its colour and its last logged value", async () => {
    const onDraw = vi.fn();
    render(<LineChart chartKey="train/loss" x={x} series={[train, other]} onDraw={onDraw} />);

    const root = screen.getByTestId("chart-train/loss");
    expect(root).toHaveAttribute("data-series", "2");
    expect(root).toHaveAttribute("data-points", "6");
    // The legend reads the x of the latest point until the cursor is over the plot.
    expect(within(root).getByText("latest")).toBeInTheDocument();
    const a = legendItem("run-a");
    expect(a.querySelector(".chart-swatch")).toHaveStyle({ background: "#1f77b4" });
    // The last logged value, not the trailing gap.
    await waitFor(() => expect(within(a).getByTestId("legend-value")).toHaveTextContent("1.4"));
    expect(within(legendItem("run-b")).getByTestId("legend-value")).toHaveTextContent("0.9");
    expect(within(root).queryByTestId("legend-smoothed")).not.toBeInTheDocument();
    // uPlot drew (its first draw is committed after construction), with the points counted.
    await waitFor(() => expect(onDraw).toHaveBeenCalled());
    expect(onDraw.mock.lastCall?.[1]).toBe(6);
  });

  it("with smoothing, shows the smoothed value beside the logged one", async () => {
    const values = [3, 1, 3, 1];
    render(<LineChart chartKey="train/loss" x={x} series={[{ label: "noisy", color: "#333", values }]} smoothing={0.6} />);

    const item = legendItem("noisy");
    await waitFor(() => expect(within(item).getByTestId("legend-value")).toHaveTextContent(/^1$/));
    const smoothed = ema(values, 0.6).at(-1)!;
    expect(smoothed).not.toBeCloseTo(1);
    expect(within(item).getByTestId("legend-smoothed")).toHaveTextContent(`smoothed ${Number(smoothed.toPrecision(4))}`);
  });

  it("labels bytes in binary units", async () => {
    render(<LineChart chartKey="system/rss_bytes" x={[1, 2]} series={[{ label: "rss", color: "#333", values: [1024, 1.5 * 1024 ** 2] }]} unit="bytes" />);
    await waitFor(() => expect(within(legendItem("rss")).getByTestId("legend-value")).toHaveTextContent("1.5 MiB"));
  });

  it("keeps its plot for new data of the same shape, and builds a new one when the series change", async () => {
    const plots: uPlot[] = [];
    const onDraw = (plot: uPlot) => {
      if (!plots.includes(plot)) plots.push(plot);
    };
    const { rerender } = render(<LineChart chartKey="eval/loss" x={[1, 2]} series={[{ ...train, values: [2.5, 1.9] }]} onDraw={onDraw} />);
    await waitFor(() => expect(plots).toHaveLength(1));

    rerender(<LineChart chartKey="eval/loss" x={[1, 2, 3]} series={[{ ...train, values: [2.5, 1.9, 1.2] }]} onDraw={onDraw} />);
    await waitFor(() => expect(within(legendItem("run-a")).getByTestId("legend-value")).toHaveTextContent("1.2"));
    expect(screen.getByTestId("chart-eval/loss")).toHaveAttribute("data-points", "3");
    expect(plots).toHaveLength(1);
    expect(plots[0].data[0]).toEqual([1, 2, 3]);

    rerender(<LineChart chartKey="eval/loss" x={[1, 2, 3]} series={[{ ...train, label: "renamed", values: [2.5, 1.9, 1.2] }]} onDraw={onDraw} />);
    await waitFor(() => expect(plots).toHaveLength(2));
    expect(screen.getByText("renamed")).toBeInTheDocument();
    expect(screen.queryByText("run-a")).not.toBeInTheDocument();
  });

  it("draws a series at its own width, in the band of its min and max (a mean over seeds), beside a default one", async () => {
    const plots: uPlot[] = [];
    const mean: ChartSeries = { label: "lora · mean", color: "#1f77b4", values: [2, 1.5], min: [1.8, 1.2], max: [2.3, 1.9], width: 2.5 };
    const seed: ChartSeries = { label: "lora · seed 1", color: "#1f77b4", values: [1.8, 1.2], width: 1 };
    render(<LineChart chartKey="eval/loss" x={[1, 2]} series={[seed, mean, { ...train, values: [2.5, 1.9] }]} onDraw={(plot) => plots.push(plot)} />);
    await waitFor(() => expect(plots.length).toBeGreaterThan(0));
    const plot = plots[0];
    expect(plot.series.slice(1, 4).map((s) => s.width)).toEqual([1, 2.5, 1.5]);
    // Two hidden series after the drawn ones hold the mean's max and min; the band fills between them.
    expect(plot.series).toHaveLength(6);
    // uPlot keeps the options it was built with (its typings leave them out of the instance).
    expect((plot as unknown as { bands: uPlot.Band[] }).bands).toEqual([expect.objectContaining({ series: [4, 5] })]);
    expect(plot.data[4]).toEqual([2.3, 1.9]);
    expect(plot.data[5]).toEqual([1.8, 1.2]);
    expect(screen.getByTestId("chart-eval/loss")).toHaveAttribute("data-series", "3");
  });
});
