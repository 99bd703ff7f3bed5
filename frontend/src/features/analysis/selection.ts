// The analysis page's runs, read from ?runs=1,2,3 as the compare page reads its own, with a higher cap: the page draws
// a line per run, and the runs list answers at most 200 in one request.
import { parseRunIds, type RunIdsSelection } from "../../lib/runIds";

export const MAX_ANALYSIS_RUNS = 200;

export function parseAnalysisRuns(raw: string | null): RunIdsSelection {
  return parseRunIds(raw, MAX_ANALYSIS_RUNS);
}

/** The analysis page's address for these runs, in their order. */
export function analysisHref(ids: readonly number[]): string {
  return `/analysis?runs=${ids.join(",")}`;
}
