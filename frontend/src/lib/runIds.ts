// A page's runs read from ?runs=1,2,3: the URL is the state (compare, analysis).
export type RunIdsSelection =
  | { kind: "none" }
  | { kind: "invalid"; tokens: string[] }
  | { kind: "too-many"; count: number }
  | { kind: "ok"; ids: number[] };

/** Distinct positive run ids in their order, at most `max` of them. */
export function parseRunIds(raw: string | null, max: number): RunIdsSelection {
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
