import { useCallback, useId, useMemo, useRef } from "react";
import type uPlot from "uplot";

import { LineChart } from "../../../components/charts/LineChart";
import { chartCsv, chartPng, exportFilename, saveBlob } from "../../../components/charts/export";
import { X_AXIS_LABELS } from "../../../components/charts/format";
import { formatBytes, formatNumber } from "../../../lib/format";
import { buildChartData, type RunSeriesSet } from "../chartData";
import type { ChartControlsState } from "../controls";
import { isSmoothable, METRIC_TITLES } from "../keys";

/** The zoom group of the metric charts of a page (a page shows one set at a time). */
export const PAGE_CHARTS_SYNC_KEY = "metric-charts";

function lastLogged(values: readonly (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

/** One metric of one or more runs, drawn on the chosen axis; the chart stays mounted while there is no data. */
export function MetricChartCard({
  metricKey,
  runs,
  controls,
  bands = false,
  height,
  onDraw,
  syncKey = PAGE_CHARTS_SYNC_KEY,
}: {
  metricKey: string;
  runs: readonly RunSeriesSet[];
  controls: ChartControlsState;
  bands?: boolean;
  height?: number;
  onDraw?: (plot: uPlot, points: number) => void;
  /** Charts of one key zoom together; each x axis has its own group, since a step range means nothing in time. */
  syncKey?: string;
}) {
  const { x, series, unplaced } = useMemo(
    () => buildChartData(metricKey, runs, controls.xKind, bands),
    [metricKey, runs, controls.xKind, bands],
  );
  const title = METRIC_TITLES[metricKey] ?? metricKey;
  const unit = metricKey.endsWith("_bytes") ? "bytes" : undefined;
  const titleId = useId();
  const plotRef = useRef<uPlot | null>(null);
  const onDrawRef = useRef(onDraw);
  onDrawRef.current = onDraw;
  const onPlotDraw = useCallback((plot: uPlot, points: number) => {
    plotRef.current = plot;
    onDrawRef.current?.(plot, points);
  }, []);

  const exportCsv = () => {
    const csv = chartCsv(controls.xKind, x, series);
    saveBlob(new Blob([csv], { type: "text/csv" }), exportFilename(metricKey, "csv"));
  };
  const exportPng = async () => {
    const plot = plotRef.current;
    if (!plot) return;
    const formatLatest = (v: number | null) => (unit && v !== null ? formatBytes(v) : formatNumber(v, 4));
    const legend = series.map((s) => ({ label: s.label, color: s.color, value: formatLatest(lastLogged(s.values)) }));
    const png = await chartPng(plot.ctx.canvas, plot.width, `${title} (${metricKey})`, legend);
    saveBlob(png, exportFilename(metricKey, "png"));
  };

  return (
    <section className="card chart-card" aria-labelledby={titleId}>
      <header className="chart-card-header">
        <h2 id={titleId}>{title}</h2>
        <span className="help">
          {metricKey} · x: {X_AXIS_LABELS[controls.xKind].toLowerCase()}
        </span>
        <span className="chart-export">
          <button type="button" className="small" onClick={exportCsv} disabled={series.length === 0} title="Download the chart's data as CSV">
            CSV
          </button>
          <button type="button" className="small" onClick={() => void exportPng()} disabled={series.length === 0} title="Download the chart as a PNG image">
            PNG
          </button>
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
          onDraw={onPlotDraw}
          unit={unit}
          syncKey={`${syncKey}:${controls.xKind}`}
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
