// The Pareto frontier of cells on two costs where lower is better on both (eval loss against a cost).

export type ParetoPoint = { label: string; x: number; y: number; color: string };

/** The points no other point beats on both axes, ordered by x: the line the chart draws. */
export function paretoFrontier(points: readonly ParetoPoint[]): ParetoPoint[] {
  const sorted = [...points].sort((a, b) => a.x - b.x || a.y - b.y);
  const frontier: ParetoPoint[] = [];
  for (const point of sorted) {
    if (frontier.length === 0 || point.y < frontier[frontier.length - 1].y) frontier.push(point);
  }
  return frontier;
}
