// An online RL stage's mean reward per step, one line (uPlot, as every metric chart).
import { useId, useMemo } from "react";

import type { Schemas } from "../../../api/client";
import { LineChart } from "../../../components/charts/LineChart";

export function RewardChart({ title, series }: { title: string; series: Schemas["MetricSeriesPublic"] | undefined }) {
  const titleId = useId();
  const lines = useMemo(() => (series ? [{ label: "mean reward", color: "hsl(150 60% 35%)", values: series.value }] : []), [series]);
  const x = useMemo(() => series?.step ?? [], [series]);
  return (
    <section className="pipeline-reward" aria-labelledby={titleId}>
      <h3 id={titleId}>{title}</h3>
      <div className="chart-wrap">
        <LineChart chartKey="train/reward" x={x} series={lines} height={140} />
        {lines.length === 0 && <div className="chart-empty">No reward logged yet</div>}
      </div>
    </section>
  );
}
