/** The compare page's selection, read from ?runs=1,2,3: the URL is the state. */
export const MAX_COMPARE_RUNS = 20;

export type Selection =
  | { kind: "none" }
  | { kind: "invalid"; tokens: string[] }
  | { kind: "too-many"; count: number }
  | { kind: "ok"; ids: number[] };

export function parseSelection(raw: string | null): Selection {
  const tokens = (raw ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (tokens.length === 0) return { kind: "none" };
  const invalid = tokens.filter((t) => !/^\d+$/.test(t) || Number(t) <= 0);
  if (invalid.length) return { kind: "invalid", tokens: invalid };
  const ids = [...new Set(tokens.map(Number))];
  if (ids.length > MAX_COMPARE_RUNS) return { kind: "too-many", count: ids.length };
  return { kind: "ok", ids };
}

export function formatSelection(ids: readonly number[]): string {
  return ids.join(",");
}
