// A pure uPlot line chart fed plain arrays. The plot is created once per shape (series, scale, axis) and new data
// goes through setData, so a live update costs one canvas redraw, not a new chart.
import { useEffect, useLayoutEffect, useMemo, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { formatBytes, formatNumber } from "../../lib/format";
import { countPoints, ema, type XAxisKind } from "../../lib/series";
import { BYTE_TICK_INCREMENTS, formatAxisX, formatAxisYTicks, formatByteTicks, withAlpha } from "./format";
import {
  AXIS_FONT,
  joinZoomGroup,
  readValues,
  showsMarkers,
  yAxisSize,
  yRange,
  type ReadoutColumns,
  type ZoomMember,
} from "./plot";

export type ChartSeries = {
  label: string;
  color: string;
  /** y values aligned on the chart's x; null is a gap. */
  values: readonly (number | null)[];
  /** Per-point bucket bounds of a downsampled series, shaded as a band. */
  min?: readonly (number | null)[] | null;
  max?: readonly (number | null)[] | null;
  /** Line width in CSS pixels (default 1.5, 1 under a smoothed line): thin seed runs beside their bold mean. */
  width?: number;
};

export type LineChartProps = {
  /** The metric key; the root carries data-testid="chart-<key>". */
  chartKey: string;
  x: readonly number[];
  series: readonly ChartSeries[];
  /** EMA weight 0…0.99; above 0 the raw line is drawn faintly under the smoothed one. */
  smoothing?: number;
  logY?: boolean;
  xKind?: XAxisKind;
  height?: number;
  /** Called after every redraw with the plot and the number of points drawn. */
  onDraw?: (plot: uPlot, points: number) => void;
  /**
   * Charts of one key move their cursors together and zoom together on x: a drag zooms them all, a double-click
   * resets them all. Without one the chart zooms alone.
   */
  syncKey?: string;
  /** What the y values count: bytes are labelled in KiB/MiB/GiB on the axis and in the legend. */
  unit?: "bytes";
};

type Prepared = {
  data: uPlot.AlignedData;
  /** Where in `data` each input series' logged values (and EMA, when smoothing) are. */
  columns: ReadoutColumns[];
  points: number;
};

function positive(values: readonly (number | null)[] | null | undefined): (number | null)[] | null {
  if (!values) return null;
  return values.map((v) => (v !== null && v > 0 ? v : null));
}

function prepare(x: readonly number[], series: readonly ChartSeries[], smoothing: number, logY: boolean): Prepared {
  const columns: (number | null)[][] = [];
  const readout: ReadoutColumns[] = [];
  const bands: (number | null)[][] = [];
  let points = 0;
  for (const s of series) {
    const values = logY ? positive(s.values)! : (s.values as (number | null)[]);
    points += countPoints(values);
    columns.push(values);
    const raw = columns.length;
    if (smoothing > 0) columns.push(ema(values, smoothing));
    readout.push({ raw, smoothed: smoothing > 0 ? columns.length : null });
    if (s.min && s.max) {
      bands.push((logY ? positive(s.max) : (s.max as (number | null)[]))!);
      bands.push((logY ? positive(s.min) : (s.min as (number | null)[]))!);
    }
  }
  return { data: [x as number[], ...columns, ...bands] as uPlot.AlignedData, columns: readout, points };
}

let measureContext: CanvasRenderingContext2D | null = null;

/** The width in CSS pixels of a tick label drawn in the axis font. */
function measureAxisLabel(text: string): number {
  measureContext ??= document.createElement("canvas").getContext("2d");
  if (!measureContext) return text.length * 7;
  measureContext.font = AXIS_FONT;
  return measureContext.measureText(text).width;
}

/** Markers for a series of one or a few points (a line needs two). */
const sparsePoints: uPlot.Series.Points = {
  show: (u, seriesIdx) => showsMarkers(u.data[seriesIdx] as ArrayLike<number | null>),
  size: 7,
};

export function LineChart({
  chartKey,
  x,
  series,
  smoothing = 0,
  logY = false,
  xKind = "step",
  height = 220,
  onDraw,
  syncKey,
  unit,
}: LineChartProps) {
  const rootRef = useRef<HTMLDivElement>(null);
  const plotRef = useRef<HTMLDivElement>(null);
  const xReadRef = useRef<HTMLSpanElement>(null);
  const valueRefs = useRef<(HTMLSpanElement | null)[]>([]);
  const smoothedRefs = useRef<(HTMLSpanElement | null)[]>([]);
  const uplotRef = useRef<uPlot | null>(null);
  const zoomedRef = useRef(false);
  const onDrawRef = useRef(onDraw);
  onDrawRef.current = onDraw;

  const smooth = Math.min(Math.max(smoothing, 0), 0.99);
  const prepared = useMemo(() => prepare(x, series, smooth, logY), [x, series, smooth, logY]);
  const preparedRef = useRef(prepared);
  preparedRef.current = prepared;

  const hasBands = series.some((s) => s.min && s.max);
  const shape = JSON.stringify([series.map((s) => [s.label, s.color, s.width]), smooth > 0, logY, xKind, hasBands, height, syncKey, unit]);

  // Create the plot when its shape changes.
  useLayoutEffect(() => {
    const host = plotRef.current;
    const root = rootRef.current;
    if (!host || !root) return;
    const current = preparedRef.current;
    // This plot's own columns: a later render's may not match the data it holds, and uPlot can still fire a hook
    // after destroy (its first draw is committed in a microtask), which read columns it did not have.
    const columns = current.columns;
    let destroyed = false;
    // Set by a drag's selection, which uPlot reports just before it applies it as the x scale: that scale change is
    // the user's zoom, to pass on to the group (a live update's rescale is not).
    let userZoom = false;
    const smoothed = smooth > 0;
    const uSeries: uPlot.Series[] = [{ label: xKind }];
    for (const s of series) {
      uSeries.push({
        label: s.label,
        stroke: smoothed ? withAlpha(s.color, 0.28) : s.color,
        width: smoothed ? Math.min(1, s.width ?? 1) : (s.width ?? 1.5),
        spanGaps: true,
        points: smoothed ? { show: false } : { ...sparsePoints, fill: s.color },
      });
      if (smoothed) {
        uSeries.push({ label: `${s.label} (smoothed)`, stroke: s.color, width: s.width ?? 1.75, spanGaps: true, points: { ...sparsePoints, fill: s.color } });
      }
    }
    const bands: uPlot.Band[] = [];
    for (const s of series) {
      if (!(s.min && s.max)) continue;
      const maxIdx = uSeries.length;
      uSeries.push({ label: `${s.label} max`, stroke: "transparent", width: 0, spanGaps: true, points: { show: false } });
      uSeries.push({ label: `${s.label} min`, stroke: "transparent", width: 0, spanGaps: true, points: { show: false } });
      bands.push({ series: [maxIdx, maxIdx + 1], fill: withAlpha(s.color, 0.12) });
    }
    const axisStyle = { stroke: "#5f6b7a", grid: { stroke: "#eef1f5", width: 1 }, ticks: { stroke: "#dde2e8", width: 1 }, font: AXIS_FONT };
    const opts: uPlot.Options = {
      width: Math.max(200, host.clientWidth),
      height,
      series: uSeries,
      bands,
      legend: { show: false },
      cursor: {
        drag: { x: true, y: false },
        points: { size: 6 },
        // uPlot syncs the cursor (a hover shows every chart's values at that x); the zoom goes through the group,
        // so a drag is not also replayed on the others by uPlot.
        sync: syncKey ? { key: syncKey, setSeries: false, filters: { pub: (type) => type === "mousemove" || type === "mouseleave" } } : undefined,
      },
      scales: { x: { time: false }, y: logY ? { distr: 3, log: 10 } : { range: (_u, min, max) => yRange(min, max) } },
      axes: [
        { ...axisStyle, values: (_u, splits) => splits.map((v) => (v === null ? "" : formatAxisX(v, xKind))) },
        {
          ...axisStyle,
          size: (_u, labels) => yAxisSize(labels, measureAxisLabel),
          values: (_u, splits) => (unit === "bytes" ? formatByteTicks(splits) : formatAxisYTicks(splits)),
          incrs: unit === "bytes" ? BYTE_TICK_INCREMENTS : undefined,
        },
      ],
      hooks: {
        draw: [
          (u) => {
            if (destroyed) return;
            const points = preparedRef.current.points;
            root.dataset.points = String(points);
            root.dataset.series = String(series.length);
            onDrawRef.current?.(u, points);
          },
        ],
        setCursor: [
          (u) => {
            if (!destroyed) updateReadout(u, columns, u.cursor.idx ?? null);
          },
        ],
        setSelect: [
          (u) => {
            if (u.select.width > 0) zoomedRef.current = userZoom = true;
          },
        ],
        setScale: [
          (u, scaleKey) => {
            if (scaleKey !== "x" || destroyed) return;
            // What the chart shows on x, for tests and tools that read the page.
            root.dataset.xRange = `${u.scales.x.min},${u.scales.x.max}`;
            if (!userZoom) return;
            userZoom = false;
            const { min, max } = u.scales.x;
            if (min !== undefined && max !== undefined) zoom?.group.zoom(member, { min, max });
          },
        ],
      },
    };
    const plot = new uPlot(opts, current.data, host);
    uplotRef.current = plot;
    updateReadout(plot, columns, null);
    const member: ZoomMember = {
      showX: (range) => {
        if (destroyed) return;
        zoomedRef.current = range !== null;
        // uPlot refits y to the points inside a new x range; null is its own reset, every scale back to the data.
        if (range) plot.setScale("x", range);
        else plot.setData(plot.data, true);
      },
    };
    const zoom = syncKey ? joinZoomGroup(syncKey, member) : null;
    const resetZoom = () => {
      zoomedRef.current = false;
      zoom?.group.zoom(member, null);
    };
    plot.over.addEventListener("dblclick", resetZoom);
    const resize = new ResizeObserver(() => {
      const width = Math.max(200, host.clientWidth);
      if (width !== plot.width) plot.setSize({ width, height });
    });
    resize.observe(host);
    return () => {
      destroyed = true;
      zoom?.leave();
      resize.disconnect();
      plot.over.removeEventListener("dblclick", resetZoom);
      plot.destroy();
      uplotRef.current = null;
      zoomedRef.current = false;
    };
    // `shape` stands for the series labels and colours, smoothing on/off, scale, axis, bands, height and sync key;
    // new data alone goes through setData below, not a new plot.
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the plot is rebuilt only when its shape changes
  }, [shape]);

  // New data for the same shape: setData, keeping a user's zoom.
  useEffect(() => {
    const plot = uplotRef.current;
    if (!plot || plot.data === prepared.data) return;
    if (zoomedRef.current) {
      // Keep the user's x range, and fit y to what is inside it now, new points included.
      const { min, max } = plot.scales.x;
      plot.batch(() => {
        plot.setData(prepared.data, false);
        if (min !== undefined && max !== undefined) plot.setScale("x", { min, max });
      });
    } else {
      plot.setData(prepared.data, true);
    }
    updateReadout(plot, prepared.columns, plot.cursor.idx ?? null);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- updateReadout reads refs, its arguments and xKind (in shape)
  }, [prepared]);

  function formatValue(value: number | null): string {
    return unit === "bytes" && value !== null ? formatBytes(value) : formatNumber(value, 4);
  }

  function updateReadout(plot: uPlot, columns: readonly ReadoutColumns[], idx: number | null) {
    const data = plot.data;
    if (xReadRef.current) {
      xReadRef.current.textContent = idx === null ? "latest" : `${xKind === "step" ? "step " : ""}${formatAxisX(data[0][idx], xKind)}`;
    }
    readValues(data as ArrayLike<number | null>[], columns, idx).forEach(({ raw, smoothed }, i) => {
      const rawEl = valueRefs.current[i];
      if (rawEl) rawEl.textContent = formatValue(raw);
      const smoothedEl = smoothedRefs.current[i];
      if (smoothedEl) smoothedEl.textContent = smoothed === null ? "" : `smoothed ${formatValue(smoothed)}`;
    });
  }

  return (
    <div
      className="chart"
      ref={rootRef}
      data-testid={`chart-${chartKey}`}
      data-series={series.length}
      data-points={prepared.points}
    >
      <div className="chart-plot" ref={plotRef} />
      <div className="chart-legend">
        <span className="chart-legend-x" ref={xReadRef}>
          latest
        </span>
        {series.map((s, i) => (
          <span className="chart-legend-item" key={`${s.label}-${i}`}>
            <i className="chart-swatch" style={{ background: s.color }} />
            <span className="chart-legend-label">{s.label}</span>
            <span
              className="chart-legend-value"
              data-testid="legend-value"
              ref={(el) => {
                valueRefs.current[i] = el;
              }}
            />
            {smooth > 0 && (
              <span
                className="chart-legend-smoothed"
                data-testid="legend-smoothed"
                ref={(el) => {
                  smoothedRefs.current[i] = el;
                }}
              />
            )}
          </span>
        ))}
      </div>
    </div>
  );
}

