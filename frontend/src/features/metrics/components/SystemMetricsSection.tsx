import { useId } from "react";

import type { RunSeriesSet } from "../chartData";
import type { ChartControlsState } from "../controls";
import { isSystemKey, sortMetricKeys } from "../keys";
import { MetricChartCard } from "./MetricChartCard";

/**
 * The training process's CPU, memory and GPU use over time, collapsed under the training charts: read when a run is
 * slow or runs out of memory, not at every glance. Its charts zoom with the page's others (they share the step axis).
 */
export function SystemMetricsSection({
  runs,
  controls,
}: {
  runs: readonly RunSeriesSet[];
  controls: ChartControlsState;
}) {
  const summaryId = useId();
  const keys = sortMetricKeys(runs.flatMap((run) => Object.keys(run.series))).filter(isSystemKey);
  if (keys.length === 0) return null;
  return (
    <details className="card system-metrics" aria-labelledby={summaryId}>
      <summary id={summaryId}>System</summary>
      <div className="chart-grid">
        {keys.map((key) => (
          <MetricChartCard key={key} metricKey={key} runs={runs} controls={controls} />
        ))}
      </div>
    </details>
  );
}
