// Parallel coordinates: one vertical axis per dimension, one line per succeeded run through its values, coloured by a
// result figure. SVG: at most 200 lines over a few dozen axes. Hover a line to read it, click it to open its run,
// drag along an axis to keep a range (click the axis to clear it).
import { useRef, useState, type PointerEvent } from "react";
import { useNavigate } from "react-router";

import type { Run } from "../../../api/client";
import {
  NO_VALUE_COLOR,
  axisPosition,
  axisTitle,
  brushExtent,
  brushFromPositions,
  categoryPosition,
  drawOrder,
  formatRunValue,
  inAllBrushes,
  isDrawable,
  runColor,
  type Axis,
  type Brush,
  type NumericAxis,
} from "../dimensions";

const AXIS_GAP = 130;
const PAD = { left: 60, right: 100, top: 44, bottom: 14 };
const PLOT_HEIGHT = 300;
const NONE_GAP = 26;
const TOP = PAD.top;
const BOTTOM = PAD.top + PLOT_HEIGHT;
const LABEL_CHARS = 18;
/** A drag shorter than this (a share of the axis) is a click: it clears the axis's brush. */
const CLICK_TOLERANCE = 0.02;
const FADED = "#d5dae0";

function shorten(text: string, chars = LABEL_CHARS): string {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

/** Where a value sits on the page: the top of the axis for position 1, the "none" slot below it for no value. */
function yOf(position: number | null, noneY: number): number {
  return position === null ? noneY : BOTTOM - position * PLOT_HEIGHT;
}

type Props = {
  /** The runs; only succeeded ones are drawn (the caller lists the others). */
  runs: readonly Run[];
  axes: readonly Axis[];
  colorAxis: NumericAxis | null;
  brushes?: Readonly<Record<string, Brush>>;
  /** Set (or, with null, clear) the brush on an axis; absent: no brushing. */
  onBrush?: (key: string, brush: Brush | null) => void;
  title?: string;
};

export function ParallelCoordinates({ runs, axes, colorAxis, brushes = {}, onBrush, title = "Parameters and results of the runs" }: Props) {
  const navigate = useNavigate();
  const svgRef = useRef<SVGSVGElement>(null);
  const [hoveredId, setHoveredId] = useState<number | null>(null);
  const [drag, setDrag] = useState<{ key: string; from: number; to: number } | null>(null);
  const drawn = drawOrder(runs.filter(isDrawable), colorAxis);

  if (drawn.length === 0) return <p className="help">No succeeded run to draw yet.</p>;
  if (axes.length === 0) return <p className="help">Choose at least one axis.</p>;

  const anyMissing = axes.some((axis) => axis.hasMissing);
  const noneY = BOTTOM + NONE_GAP;
  const height = (anyMissing ? noneY : BOTTOM) + PAD.bottom + 8;
  const width = PAD.left + (axes.length - 1) * AXIS_GAP + PAD.right;
  const xOf = (i: number) => PAD.left + i * AXIS_GAP;
  const hovered = drawn.find((run) => run.id === hoveredId) ?? null;
  const brushed = Object.keys(brushes).some((key) => axes.some((axis) => axis.dimension.key === key));

  const linePath = (run: Run) => {
    const points = axes.map((axis, i) => [xOf(i), yOf(axisPosition(axis, run), noneY)] as const);
    // One axis: a short stroke across it, so that the run still shows.
    const stretched = points.length === 1 ? [[points[0][0] - 12, points[0][1]] as const, [points[0][0] + 12, points[0][1]] as const] : points;
    return stretched.map(([x, y], i) => `${i === 0 ? "M" : "L"}${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
  };

  const paths = new Map(drawn.map((run) => [run.id, linePath(run)]));
  const pathOf = (run: Run) => paths.get(run.id) ?? "";

  const positionAt = (e: PointerEvent<SVGElement>) => {
    const rect = svgRef.current?.getBoundingClientRect();
    const scale = rect && rect.height > 0 ? height / rect.height : 1;
    const y = (e.clientY - (rect?.top ?? 0)) * scale;
    return Math.min(1, Math.max(0, (BOTTOM - y) / PLOT_HEIGHT));
  };

  const endDrag = (axis: Axis) => {
    if (!drag || drag.key !== axis.dimension.key || !onBrush) return;
    const isClick = Math.abs(drag.to - drag.from) < CLICK_TOLERANCE;
    onBrush(axis.dimension.key, isClick ? null : brushFromPositions(axis, drag.from, drag.to));
    setDrag(null);
  };

  return (
    <div className="analysis-pc" data-testid="parallel-coordinates" data-lines={drawn.length}>
      <div className="table-scroll">
        <svg
          ref={svgRef}
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={`${title}: ${drawn.length} ${drawn.length === 1 ? "run" : "runs"} across ${axes.map(axisTitle).join(", ")}`}
          onMouseLeave={() => setHoveredId(null)}
        >
          <title>{title}</title>
          <g className="analysis-lines" fill="none">
            {drawn.map((run) => {
              const active = !brushed || inAllBrushes(axes, brushes, run);
              const faded = !active || (hoveredId !== null && hoveredId !== run.id);
              return (
                <g key={run.id} data-run-id={run.id} data-active={active}>
                  <path
                    d={pathOf(run)}
                    stroke={active ? runColor(colorAxis, run) : FADED}
                    strokeWidth={hoveredId === run.id ? 3 : 1.5}
                    strokeOpacity={faded ? 0.25 : 0.85}
                  />
                  <path
                    className="analysis-hit"
                    d={pathOf(run)}
                    stroke="transparent"
                    strokeWidth={8}
                    pointerEvents="stroke"
                    onMouseEnter={() => setHoveredId(run.id)}
                    onClick={() => navigate(`/runs/${run.id}`)}
                  >
                    <title>{`${run.name} (run ${run.id})`}</title>
                  </path>
                </g>
              );
            })}
            {hovered && <path d={pathOf(hovered)} stroke={runColor(colorAxis, hovered)} strokeWidth={3} pointerEvents="none" />}
          </g>
          {axes.map((axis, i) => (
            <AxisView
              key={axis.dimension.key}
              axis={axis}
              x={xOf(i)}
              noneY={noneY}
              brush={brushes[axis.dimension.key]}
              dragging={drag?.key === axis.dimension.key ? drag : null}
              onPointerDown={
                onBrush &&
                ((e) => {
                  e.currentTarget.setPointerCapture?.(e.pointerId);
                  const at = positionAt(e);
                  setDrag({ key: axis.dimension.key, from: at, to: at });
                })
              }
              onPointerMove={(e) => {
                if (drag?.key === axis.dimension.key) setDrag({ ...drag, to: positionAt(e) });
              }}
              onPointerUp={() => endDrag(axis)}
            />
          ))}
        </svg>
      </div>
      <div className="analysis-hover" data-testid="analysis-hover" aria-live="polite">
        {hovered ? (
          <>
            <strong>{hovered.name}</strong> <span className="help">run {hovered.id} · click to open</span>
            <dl className="analysis-values">
              {axes.map((axis) => (
                <div key={axis.dimension.key}>
                  <dt>{axis.dimension.label}</dt>
                  <dd className="mono">{formatRunValue(axis.dimension, hovered)}</dd>
                </div>
              ))}
            </dl>
          </>
        ) : (
          <span className="help">Hover a line to read its run; click it to open the run.{onBrush && " Drag along an axis to keep a range."}</span>
        )}
      </div>
    </div>
  );
}

type AxisViewProps = {
  axis: Axis;
  x: number;
  noneY: number;
  brush: Brush | undefined;
  dragging: { from: number; to: number } | null;
  onPointerDown?: (e: PointerEvent<SVGRectElement>) => void;
  onPointerMove: (e: PointerEvent<SVGRectElement>) => void;
  onPointerUp: () => void;
};

function AxisView({ axis, x, noneY, brush, dragging, onPointerDown, onPointerMove, onPointerUp }: AxisViewProps) {
  const heading = axis.dimension.label;
  const log = axis.kind === "numeric" && axis.log;
  const extent = dragging ? ([Math.min(dragging.from, dragging.to), Math.max(dragging.from, dragging.to)] as const) : brush ? brushExtent(axis, brush) : null;
  const tick = (label: string, position: number) => (
    <text x={x + 6} y={yOf(position, noneY)} dy="0.35em" fontSize={10} className="analysis-tick" paintOrder="stroke" stroke="#fff" strokeWidth={3}>
      {shorten(label)}
      {label.length > LABEL_CHARS && <title>{label}</title>}
    </text>
  );
  return (
    <g className="analysis-axis" data-axis={axis.dimension.key} data-scale={axis.kind === "numeric" ? (axis.log ? "log" : "linear") : "categorical"}>
      <line x1={x} x2={x} y1={TOP} y2={BOTTOM} stroke="currentColor" strokeOpacity={0.55} />
      <text x={x} y={TOP - 22} fontSize={11} fontWeight={600} textAnchor="middle">
        {shorten(heading)}
        <title>{axisTitle(axis)}</title>
      </text>
      {log && (
        <text x={x} y={TOP - 9} fontSize={9} textAnchor="middle" fillOpacity={0.7}>
          log scale
        </text>
      )}
      {axis.kind === "numeric" ? (
        <>
          {tick(axis.ticks[1], 1)}
          {tick(axis.ticks[0], 0)}
        </>
      ) : (
        axis.categories.map((category, i) => <g key={category}>{tick(category, categoryPosition(i, axis.categories.length))}</g>)
      )}
      {axis.hasMissing && (
        <text x={x + 6} y={noneY} dy="0.35em" fontSize={10} fill={NO_VALUE_COLOR}>
          none
        </text>
      )}
      {extent && (
        <rect
          className="analysis-brush"
          x={x - 7}
          width={14}
          y={BOTTOM - extent[1] * PLOT_HEIGHT}
          height={Math.max(2, (extent[1] - extent[0]) * PLOT_HEIGHT)}
          fill="currentColor"
          fillOpacity={0.15}
          stroke="currentColor"
          strokeOpacity={0.6}
          pointerEvents="none"
        />
      )}
      {onPointerDown && (
        <rect
          className="analysis-brush-target"
          x={x - 12}
          width={24}
          y={TOP}
          height={PLOT_HEIGHT}
          fill="transparent"
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={onPointerUp}
        >
          <title>{`Drag to keep a range of ${axis.dimension.label}; click to clear it`}</title>
        </rect>
      )}
    </g>
  );
}
