/** The compare page's selection, read from ?runs=1,2,3: the URL is the state. */
import { parseRunIds, type RunIdsSelection } from "../../lib/runIds";

export const MAX_COMPARE_RUNS = 20;

export type Selection = RunIdsSelection;

export function parseSelection(raw: string | null): Selection {
  return parseRunIds(raw, MAX_COMPARE_RUNS);
}

export function formatSelection(ids: readonly number[]): string {
  return ids.join(",");
}
