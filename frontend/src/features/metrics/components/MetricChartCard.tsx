import { useMemo } from "react";
import type uPlot from "uplot";

import { LineChart } from "../../../components/charts/LineChart";
import { X_AXIS_LABELS } from "../../../components/charts/format";
import { buildChartData, type RunSeriesSet } from "../chartData";
import type { ChartControlsState } from "../controls";
import { isSmoothable, METRIC_TITLES } from "../keys";

/** One metric of one or more runs, drawn on the chosen axis; the chart stays mounted while there is no data. */
export function MetricChartCard({
  metricKey,
  runs,
  controls,
  bands = false,
  height,
  onDraw,
}: {
  metricKey: string;
  runs: readonly RunSeriesSet[];
  controls: ChartControlsState;
  bands?: boolean;
  height?: number;
  onDraw?: (plot: uPlot, points: number) => void;
}) {
  const { x, series, unplaced } = useMemo(
    () => buildChartData(metricKey, runs, controls.xKind, bands),
    [metricKey, runs, controls.xKind, bands],
  );
  return (
    <section className="card chart-card">
      <header className="chart-card-header">
        <h2>{METRIC_TITLES[metricKey] ?? metricKey}</h2>
        <span className="help">
          {metricKey} · x: {X_AXIS_LABELS[controls.xKind].toLowerCase()}
        </span>
      </header>
      <div className="chart-wrap">
        <LineChart
          chartKey={metricKey}
          x={x}
          series={series}
          smoothing={isSmoothable(metricKey) ? controls.smoothing : 0}
          logY={controls.logY}
          xKind={controls.xKind}
          height={height}
          onDraw={onDraw}
        />
        {series.length === 0 && (
          <div className="chart-empty">
            {unplaced.length ? "No token counts logged for this axis" : "No data yet"}
          </div>
        )}
      </div>
      {unplaced.length > 0 && series.length > 0 && (
        <p className="help">Not shown on this axis (no train/tokens_seen): {unplaced.join(", ")}</p>
      )}
    </section>
  );
}
