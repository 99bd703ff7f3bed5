// Where a chart's axis starts and ends (the study's Pareto charts, the analysis page's axes).

/**
 * The [low, high] an axis spans: the values' range or, when they are all one value (one point, or points that tie),
 * that value ±10 % (×/÷ 2 on a log axis; ±1 around 0), so the point sits inside an axis whose two ends differ; [0, 1]
 * with no values.
 */
export function axisRange(values: readonly number[], log: boolean): [number, number] {
  if (values.length === 0) return [0, 1];
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (hi > lo) return [lo, hi];
  if (log) return [lo / 2, lo * 2];
  const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
  return [lo - pad, lo + pad];
}
