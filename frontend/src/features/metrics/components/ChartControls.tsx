import { X_AXIS_LABELS } from "../../../components/charts/format";
import type { XAxisKind } from "../../../lib/series";
import type { ChartControlsState } from "../controls";

export function ChartControls({
  value,
  onChange,
}: {
  value: ChartControlsState;
  onChange: (patch: Partial<ChartControlsState>) => void;
}) {
  return (
    <div className="toolbar chart-controls" data-testid="metric-controls">
      <span className="control">
        <span className="control-label">Smoothing</span>
        <input
          type="range"
          min={0}
          max={0.99}
          step={0.01}
          value={value.smoothing}
          aria-label="EMA smoothing"
          data-testid="smoothing"
          onChange={(e) => onChange({ smoothing: Number(e.target.value) })}
        />
        <output className="control-value">{value.smoothing.toFixed(2)}</output>
      </span>
      <label className="control inline">
        <input
          type="checkbox"
          checked={value.logY}
          data-testid="log-scale"
          onChange={(e) => onChange({ logY: e.target.checked })}
        />
        Log scale
      </label>
      <span className="control">
        <span className="control-label">X axis</span>
        <select
          value={value.xKind}
          aria-label="X axis"
          data-testid="x-axis"
          onChange={(e) => onChange({ xKind: e.target.value as XAxisKind })}
        >
          {(Object.keys(X_AXIS_LABELS) as XAxisKind[]).map((kind) => (
            <option key={kind} value={kind}>
              {X_AXIS_LABELS[kind]}
            </option>
          ))}
        </select>
      </span>
    </div>
  );
}
