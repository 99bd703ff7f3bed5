// The Pareto frontier of cells on a cost (x, lower is better) and a quality (y): an eval loss, where lower is better,
// or a score of generated answers such as ROUGE-L, where higher is.

export type ParetoPoint = { label: string; x: number; y: number; color: string };
export type Better = "lower" | "higher";

/** The points no other point beats on both axes, ordered by x: the line the chart draws. */
export function paretoFrontier(points: readonly ParetoPoint[], yBetter: Better = "lower"): ParetoPoint[] {
  // Flipping a higher-is-better y makes both axes lower-is-better.
  const sign = yBetter === "lower" ? 1 : -1;
  const sorted = [...points].sort((a, b) => a.x - b.x || sign * (a.y - b.y));
  const frontier: ParetoPoint[] = [];
  for (const point of sorted) {
    if (frontier.length === 0 || sign * point.y < sign * frontier[frontier.length - 1].y) frontier.push(point);
  }
  return frontier;
}

/**
 * The [low, high] an axis spans: its values' range, or, when they are all one value (one cell, or cells that tie),
 * that value ±10 % (×/÷ 2 on a log axis; ±1 around 0), so the point sits inside an axis whose two ends differ.
 */
export function axisRange(values: readonly number[], log: boolean): [number, number] {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (hi > lo) return [lo, hi];
  if (log) return [lo / 2, lo * 2];
  const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
  return [lo - pad, lo + pad];
}
