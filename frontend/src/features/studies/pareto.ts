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

