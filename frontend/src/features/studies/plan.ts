// What the study form sends, from what was typed: comma-separated lists, and how many runs that makes.

export type GridRow = { param: string; values: string };

/** "8, 16" -> [8, 16]; words stay strings ("cosine"), true/false become booleans. */
export function parseList(text: string): (number | string | boolean)[] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      if (part === "true" || part === "false") return part === "true";
      const number = Number(part);
      return Number.isFinite(number) ? number : part;
    });
}

/** Integer seeds; null when one is not an integer. */
export function parseSeeds(text: string): number[] | null {
  const values = parseList(text);
  return values.every((v) => typeof v === "number" && Number.isInteger(v) && v >= 0) ? (values as number[]) : null;
}

export function gridOf(rows: readonly GridRow[]): Record<string, (number | string | boolean)[]> {
  const grid: Record<string, (number | string | boolean)[]> = {};
  for (const row of rows) {
    const param = row.param.trim();
    if (param) grid[param] = parseList(row.values);
  }
  return grid;
}

/**
 * Runs the study makes: per method, the product of the values of the grid params it has (a param it lacks is not
 * varied), times the seeds. `paramsOf(method)` lists a method's param names.
 */
export function countRuns(
  methods: readonly string[],
  grid: Record<string, readonly unknown[]>,
  seeds: number,
  paramsOf: (method: string) => readonly string[],
): number {
  let total = 0;
  for (const method of methods) {
    const known = new Set(paramsOf(method));
    let cells = 1;
    for (const [param, values] of Object.entries(grid)) if (known.has(param)) cells *= Math.max(values.length, 1);
    total += cells * seeds;
  }
  return total;
}
