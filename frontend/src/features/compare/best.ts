/** Which cells of a column are the best: the lowest or highest of the values present (ties all win). */
export function bestIndexes(values: readonly (number | null | undefined)[], better: "low" | "high"): Set<number> {
  let best: number | null = null;
  for (const v of values) {
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    if (best === null || (better === "low" ? v < best : v > best)) best = v;
  }
  const out = new Set<number>();
  if (best === null) return out;
  values.forEach((v, i) => {
    if (v === best) out.add(i);
  });
  return out;
}
