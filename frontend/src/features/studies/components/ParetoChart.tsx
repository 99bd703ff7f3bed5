// A quality (eval loss, or a score of generated answers) against a cost, one point per cell, with the Pareto frontier
// drawn as a line (SVG: a few dozen points).
import { formatBytes, formatNumber } from "../../../lib/format";
import { axisRange } from "../../../lib/axis";
import { paretoFrontier, type Better, type ParetoPoint } from "../pareto";

const WIDTH = 320;
const HEIGHT = 220;
const PAD = { left: 52, right: 12, top: 12, bottom: 36 };

function scale([lo, hi]: [number, number], from: number, to: number, log: boolean) {
  const t = (v: number) => (log ? Math.log10(Math.max(v, 1e-12)) : v);
  const min = t(lo);
  const max = t(hi);
  return (v: number) => from + ((t(v) - min) / (max - min)) * (to - from);
}

type ParetoChartProps = {
  title: string;
  /** The cost's unit (x). */
  unit: string;
  points: ParetoPoint[];
  log?: boolean;
  /** What y measures. */
  quality?: string;
  /** Which way y is better: down for a loss, up for a score. */
  better?: Better;
};

export function ParetoChart({ title, unit, points, log = false, quality = "eval loss", better = "lower" }: ParetoChartProps) {
  const format = (v: number) => (unit === "bytes" ? formatBytes(v) : `${formatNumber(v, 3)}${unit ? ` ${unit}` : ""}`);
  if (points.length === 0) {
    return (
      <figure className="card pareto-chart" data-testid="pareto-chart" data-points={0}>
        <figcaption>{title}</figcaption>
        <p className="help">Waiting for runs that report both values.</p>
      </figure>
    );
  }
  const [xLow, xHigh] = axisRange(points.map((p) => p.x), log);
  const [yLow, yHigh] = axisRange(points.map((p) => p.y), false);
  const x = scale([xLow, xHigh], PAD.left, WIDTH - PAD.right, log);
  const y = scale([yLow, yHigh], HEIGHT - PAD.bottom, PAD.top, false);
  const frontier = paretoFrontier(points, better);
  return (
    <figure className="card pareto-chart" data-testid="pareto-chart" data-points={points.length} data-frontier={frontier.length} data-better={better}>
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%" role="img" aria-label={`${title}: ${quality} (${better} is better) against ${unit || "cost"}`}>
        <line x1={PAD.left} y1={HEIGHT - PAD.bottom} x2={WIDTH - PAD.right} y2={HEIGHT - PAD.bottom} stroke="currentColor" strokeOpacity={0.4} />
        <line x1={PAD.left} y1={PAD.top} x2={PAD.left} y2={HEIGHT - PAD.bottom} stroke="currentColor" strokeOpacity={0.4} />
        <text x={PAD.left} y={HEIGHT - 18} fontSize={10}>{format(xLow)}</text>
        <text x={WIDTH - PAD.right} y={HEIGHT - 18} fontSize={10} textAnchor="end">{format(xHigh)}</text>
        <text x={PAD.left - 4} y={HEIGHT - PAD.bottom} fontSize={10} textAnchor="end">{formatNumber(yLow, 3)}</text>
        <text x={PAD.left - 4} y={PAD.top + 8} fontSize={10} textAnchor="end">{formatNumber(yHigh, 3)}</text>
        <text x={(PAD.left + WIDTH) / 2} y={HEIGHT - 4} fontSize={10} textAnchor="middle">{unit || "cost"}{log ? " (log)" : ""} → {quality} ↑</text>
        <polyline
          className="pareto-frontier"
          fill="none"
          stroke="currentColor"
          strokeWidth={1.5}
          strokeDasharray="4 3"
          points={frontier.map((p) => `${x(p.x)},${y(p.y)}`).join(" ")}
        />
        {points.map((p) => (
          <circle key={p.label} cx={x(p.x)} cy={y(p.y)} r={5} fill={p.color} data-label={p.label}>
            <title>{`${p.label}: ${quality} ${formatNumber(p.y, 4)}, ${format(p.x)}`}</title>
          </circle>
        ))}
      </svg>
      <ul className="pareto-legend">
        {points.map((p) => (
          <li key={p.label}>
            <i className="chart-swatch" style={{ background: p.color }} /> {p.label}
          </li>
        ))}
      </ul>
    </figure>
  );
}
