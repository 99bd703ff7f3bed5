// The colour scale of the lines and points: the metric, its two ends, which way is better, and the grey of runs
// without a value.
import { useId } from "react";

import { NO_VALUE_COLOR, RAMP, axisTitle, type NumericAxis } from "../dimensions";

const WIDTH = 160;

export function ColorLegend({ axis, anyMissing }: { axis: NumericAxis; anyMissing: boolean }) {
  const gradientId = useId();
  const better = axis.dimension.better;
  return (
    <div className="analysis-legend" data-testid="analysis-legend">
      <span className="help">Colour: {axisTitle(axis)}</span>
      <span className="analysis-legend-scale">
        <span className="mono">{axis.ticks[0]}</span>
        <svg width={WIDTH} height={10} role="img" aria-label={`From ${axis.ticks[0]} to ${axis.ticks[1]}`}>
          <defs>
            <linearGradient id={gradientId}>
              {RAMP.map((color, i) => (
                <stop key={color} offset={i / (RAMP.length - 1)} stopColor={color} />
              ))}
            </linearGradient>
          </defs>
          <rect width={WIDTH} height={10} rx={2} fill={`url(#${gradientId})`} />
        </svg>
        <span className="mono">{axis.ticks[1]}</span>
      </span>
      {better && <span className="help">{better} is better</span>}
      {anyMissing && (
        <span className="help">
          <i className="chart-swatch" style={{ background: NO_VALUE_COLOR }} /> no value
        </span>
      )}
    </div>
  );
}
