// One param (or figure) against one result figure, a point per succeeded run: hover a point to read it, click it to
// open the run. SVG: at most 200 points.
import { useState } from "react";
import { Link, useNavigate } from "react-router";

import type { Run } from "../../../api/client";
import {
  axisTitle,
  buildAxis,
  categoryPosition,
  chosenOr,
  defaultScatterX,
  defaultScatterY,
  formatRunValue,
  isDrawable,
  runColor,
  scatterPoints,
  type Axis,
  type Dimension,
  type NumericAxis,
} from "../dimensions";

const WIDTH = 720;
const HEIGHT = 360;
const PAD = { left: 76, right: 20, top: 16, bottom: 52 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;
/** Room inside the frame, so that the lowest and highest points are not cut by it. */
const INSET = 0.04;
const LABEL_CHARS = 16;

const px = (position: number) => PAD.left + (INSET + position * (1 - 2 * INSET)) * PLOT_W;
const py = (position: number) => HEIGHT - PAD.bottom - (INSET + position * (1 - 2 * INSET)) * PLOT_H;

function shorten(text: string): string {
  return text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text;
}

type Props = {
  /** The runs; only succeeded ones are points. */
  runs: readonly Run[];
  /** The dimensions of the drawn runs (extractDimensions): x offers them all, y the result figures. */
  dimensions: readonly Dimension[];
  colorAxis: NumericAxis | null;
  /** Whether a run is in the parallel coordinates' brushes; others are faded. */
  isActive?: (run: Run) => boolean;
};

export function ParamScatter({ runs, dimensions, colorAxis, isActive }: Props) {
  const navigate = useNavigate();
  const [xChoice, setXChoice] = useState<string | null>(null);
  const [yChoice, setYChoice] = useState<string | null>(null);
  const [hoveredId, setHoveredId] = useState<number | null>(null);

  const drawn = runs.filter(isDrawable);
  const figures = dimensions.filter((d) => d.group === "figure" && d.kind === "numeric");
  const xKey = chosenOr(dimensions, xChoice, defaultScatterX(dimensions));
  const yKey = chosenOr(figures, yChoice, defaultScatterY(dimensions, xKey));
  const xDimension = dimensions.find((d) => d.key === xKey);
  const yDimension = figures.find((d) => d.key === yKey);

  const controls = (
    <div className="toolbar analysis-scatter-controls">
      <label className="inline">
        X
        <select value={xKey ?? ""} onChange={(e) => setXChoice(e.target.value)} data-testid="scatter-x">
          <DimensionOptions dimensions={dimensions} />
        </select>
      </label>
      <label className="inline">
        Y
        <select value={yKey ?? ""} onChange={(e) => setYChoice(e.target.value)} data-testid="scatter-y">
          <DimensionOptions dimensions={figures} />
        </select>
      </label>
    </div>
  );

  if (!xDimension || !yDimension) {
    return (
      <div className="analysis-scatter" data-testid="param-scatter" data-points={0}>
        {controls}
        <p className="help">No succeeded run reports a result figure yet.</p>
      </div>
    );
  }

  const xAxis = buildAxis(xDimension, drawn);
  const yAxis = buildAxis(yDimension, drawn);
  const { points, missing } = scatterPoints(drawn, xAxis, yAxis);
  const hovered = points.find((p) => p.run.id === hoveredId) ?? null;
  const label = `${axisTitle(yAxis)} against ${axisTitle(xAxis)}`;

  return (
    <div className="analysis-scatter" data-testid="param-scatter" data-points={points.length}>
      {controls}
      <div className="table-scroll">
        <svg width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={`${label}: ${points.length} ${points.length === 1 ? "run" : "runs"}`}>
          <title>{label}</title>
          <rect x={PAD.left} y={PAD.top} width={PLOT_W} height={PLOT_H} fill="none" stroke="currentColor" strokeOpacity={0.3} />
          <XTicks axis={xAxis} />
          <YTicks axis={yAxis} />
          <text x={PAD.left + PLOT_W / 2} y={HEIGHT - 6} fontSize={11} fontWeight={600} textAnchor="middle">
            {axisTitle(xAxis)}
          </text>
          <text x={14} y={PAD.top + PLOT_H / 2} fontSize={11} fontWeight={600} textAnchor="middle" transform={`rotate(-90 14 ${PAD.top + PLOT_H / 2})`}>
            {axisTitle(yAxis)}
          </text>
          {points.map(({ run, x, y }) => {
            const active = !isActive || isActive(run);
            return (
              <circle
                key={run.id}
                data-run-id={run.id}
                cx={px(x)}
                cy={py(y)}
                r={hoveredId === run.id ? 7 : 5}
                fill={runColor(colorAxis, run)}
                fillOpacity={active ? 0.9 : 0.2}
                stroke="#fff"
                className="analysis-point"
                onMouseEnter={() => setHoveredId(run.id)}
                onMouseLeave={() => setHoveredId(null)}
                onClick={() => navigate(`/runs/${run.id}`)}
              >
                <title>{`${run.name} (run ${run.id}): ${xAxis.dimension.label} ${formatRunValue(xAxis.dimension, run)}, ${yAxis.dimension.label} ${formatRunValue(yAxis.dimension, run)}`}</title>
              </circle>
            );
          })}
        </svg>
      </div>
      <div className="analysis-hover" aria-live="polite">
        {hovered ? (
          <>
            <strong>{hovered.run.name}</strong> <span className="help">run {hovered.run.id} · click to open</span>{" "}
            <span className="mono">
              {xAxis.dimension.label} {formatRunValue(xAxis.dimension, hovered.run)} · {yAxis.dimension.label} {formatRunValue(yAxis.dimension, hovered.run)}
            </span>
          </>
        ) : (
          <span className="help">Hover a point to read its run; click it to open the run.</span>
        )}
      </div>
      {missing.length > 0 && (
        <p className="help analysis-scatter-missing" data-testid="scatter-missing">
          Not in the scatter:{" "}
          {missing.map(({ run, reason }, i) => (
            <span key={run.id}>
              {i > 0 && ", "}
              <Link to={`/runs/${run.id}`} title={run.name}>
                run {run.id}
              </Link>{" "}
              ({reason})
            </span>
          ))}
        </p>
      )}
    </div>
  );
}

function DimensionOptions({ dimensions }: { dimensions: readonly Dimension[] }) {
  const params = dimensions.filter((d) => d.group === "param");
  const figures = dimensions.filter((d) => d.group === "figure");
  return (
    <>
      {params.length > 0 && (
        <optgroup label="Config">
          {params.map((d) => (
            <option key={d.key} value={d.key}>
              {d.label}
            </option>
          ))}
        </optgroup>
      )}
      {figures.length > 0 && (
        <optgroup label="Results">
          {figures.map((d) => (
            <option key={d.key} value={d.key}>
              {d.label}
            </option>
          ))}
        </optgroup>
      )}
    </>
  );
}

function XTicks({ axis }: { axis: Axis }) {
  const y = HEIGHT - PAD.bottom + 14;
  if (axis.kind === "categorical") {
    return (
      <>
        {axis.categories.map((category, i) => (
          <text key={category} x={px(categoryPosition(i, axis.categories.length))} y={y} fontSize={10} textAnchor="middle">
            {shorten(category)}
            <title>{category}</title>
          </text>
        ))}
      </>
    );
  }
  return (
    <>
      <text x={px(0)} y={y} fontSize={10} textAnchor="start">
        {axis.ticks[0]}
      </text>
      <text x={px(1)} y={y} fontSize={10} textAnchor="end">
        {axis.ticks[1]}
      </text>
    </>
  );
}

function YTicks({ axis }: { axis: Axis }) {
  const x = PAD.left - 4;
  if (axis.kind === "categorical") {
    return (
      <>
        {axis.categories.map((category, i) => (
          <text key={category} x={x} y={py(categoryPosition(i, axis.categories.length))} dy="0.35em" fontSize={10} textAnchor="end">
            {shorten(category)}
          </text>
        ))}
      </>
    );
  }
  return (
    <>
      <text x={x} y={py(0)} dy="0.35em" fontSize={10} textAnchor="end">
        {axis.ticks[0]}
      </text>
      <text x={x} y={py(1)} dy="0.35em" fontSize={10} textAnchor="end">
        {axis.ticks[1]}
      </text>
    </>
  );
}
