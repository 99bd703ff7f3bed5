// The analysis page's runs, read from ?runs=1,2,3 as the compare page reads its own, with a higher cap: the page draws
// a line per run, and the runs list answers at most 200 in one request.
export const MAX_ANALYSIS_RUNS = 200;

export type RunIdsSelection =
  | { kind: "none" }
  | { kind: "invalid"; tokens: string[] }
  | { kind: "too-many"; count: number }
  | { kind: "ok"; ids: number[] };

export function parseRunIds(raw: string | null, max = MAX_ANALYSIS_RUNS): RunIdsSelection {
  const tokens = (raw ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (tokens.length === 0) return { kind: "none" };
  const invalid = tokens.filter((t) => !/^\d+$/.test(t) || Number(t) <= 0);
  if (invalid.length) return { kind: "invalid", tokens: invalid };
  const ids = [...new Set(tokens.map(Number))];
  if (ids.length > max) return { kind: "too-many", count: ids.length };
  return { kind: "ok", ids };
}

/** The analysis page's address for these runs, in their order. */
export function analysisHref(ids: readonly number[]): string {
  return `/analysis?runs=${ids.join(",")}`;
}
