import { useRef } from "react";

/** The performance entries one page's charts are timed by (scripts/bench_ui.py reads the measure). */
export type ChartsDrawnNames = { mark: string; measure: string };

/**
 * Set `names.mark` when every chart has drawn the data of the latest metrics response, and measure it from
 * "tunelab:metrics-received" (set when the response arrived) as `names.measure`. Returns the chart's onDraw for a key.
 */
export function useChartsDrawnMark(dataUpdatedAt: number, keys: readonly string[], names: ChartsDrawnNames) {
  const tracked = useRef<{ version: number; waiting: Set<string> }>({ version: 0, waiting: new Set() });
  // Set during render, so it is in place before any chart of this render draws.
  if (dataUpdatedAt && tracked.current.version !== dataUpdatedAt && keys.length > 0) {
    tracked.current = { version: dataUpdatedAt, waiting: new Set(keys) };
  }
  return (key: string) => {
    const { waiting } = tracked.current;
    if (waiting.size === 0 || !waiting.delete(key) || waiting.size > 0) return;
    performance.clearMarks(names.mark);
    performance.clearMeasures(names.measure);
    performance.mark(names.mark);
    if (performance.getEntriesByName("tunelab:metrics-received", "mark").length) {
      performance.measure(names.measure, "tunelab:metrics-received", names.mark);
    }
  };
}
