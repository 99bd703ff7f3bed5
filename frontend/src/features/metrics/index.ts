// The metrics feature's public API for other features: metric queries, chart data and the chart cards with controls.
export { useComparedMetrics } from "./api/comparedMetrics";
export { metricsQueryOptions, runMetricsQueryOptions } from "./api/queries";
export { seriesByKey, type RunSeriesSet } from "./chartData";
export { ChartControls } from "./components/ChartControls";
export { ComparedMetricCharts } from "./components/ComparedMetricCharts";
export { MetricChartCard } from "./components/MetricChartCard";
export { SystemMetricsSection } from "./components/SystemMetricsSection";
export { useChartControls } from "./controls";
export { AXIS_KEYS, isSystemKey, RUN_CHART_KEYS, sortMetricKeys } from "./keys";
export { useLiveRunSeries } from "./live";
