// Runs set side by side (the compare and study pages): the chart controls, then one chart per metric key any run
// logged, x axes and the training processes' CPU and memory samples left out.
import { useMemo, type ReactNode } from "react";

import { EmptyState, ErrorBox } from "../../../components/ui/ui";
import { comparedMetricKeys, type RunSeriesSet } from "../chartData";
import { useChartsDrawnMark, type ChartsDrawnNames } from "../chartsDrawn";
import { useChartControls } from "../controls";
import { ChartControls } from "./ChartControls";
import { MetricChartCard } from "./MetricChartCard";

export type ComparedMetricChartsProps = {
  sets: RunSeriesSet[];
  /** The metrics query the sets come from: whether its data came, its error, and its data's time (for the drawn mark). */
  metrics: { data: unknown; error: unknown; dataUpdatedAt: number };
  /** Shown beside the controls (loading, live). */
  status?: ReactNode;
  /** Title of the empty state when the data came without any key to chart. */
  emptyTitle: string;
  drawnNames: ChartsDrawnNames;
  gridTestId?: string;
};

export function ComparedMetricCharts({ sets, metrics, status, emptyTitle, drawnNames, gridTestId }: ComparedMetricChartsProps) {
  const [controls, setControls] = useChartControls();
  const keys = useMemo(() => comparedMetricKeys(sets), [sets]);
  const onChartDraw = useChartsDrawnMark(metrics.dataUpdatedAt, keys, drawnNames);
  return (
    <>
      <section className="card charts-toolbar">
        <ChartControls value={controls} onChange={setControls} />
        {status}
      </section>
      {Boolean(metrics.error) && <ErrorBox error={metrics.error} />}
      {Boolean(metrics.data) && keys.length === 0 && <EmptyState title={emptyTitle} />}
      <div className="chart-grid" data-testid={gridTestId}>
        {keys.map((key) => (
          <MetricChartCard key={key} metricKey={key} runs={sets} controls={controls} onDraw={() => onChartDraw(key)} />
        ))}
      </div>
    </>
  );
}
