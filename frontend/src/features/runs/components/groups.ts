// The runs table grouped by a field of the runs (W&B's "Group"): which group each run of the page falls in, and each
// figure column's mean ± spread over a group's succeeded runs.
import type { Run } from "../../../api/client";
import type { GroupBy } from "./runsView";

/** The label of the group of runs that have no value for the field. */
export const NO_VALUE = "(none)";

export type RunGroup = {
  /** Unique among the groups of one grouping. */
  key: string;
  /** The value as shown: "lora", "#12", "16", NO_VALUE. */
  label: string;
  /** The group's runs, in the page's order. */
  runs: Run[];
  succeeded: number;
};

/** A figure over a group's succeeded runs: their mean, sample standard deviation (0 for one run) and number. */
export type GroupFigure = { mean: number; spread: number; n: number };

type GroupValue = { key: string; label: string; order: number | string };

const NONE: GroupValue = { key: "none", label: NO_VALUE, order: "" };

function paramGroupValue(value: unknown): GroupValue {
  if (value === undefined || value === null) return NONE;
  if (typeof value === "number") return { key: `n:${value}`, label: String(value), order: value };
  const label = typeof value === "string" ? value : JSON.stringify(value);
  return { key: `${typeof value}:${label}`, label, order: label };
}

/** The groups one run falls in: one for most fields, one per tag (none when it has no tag: the NO_VALUE group). */
function groupValues(run: Run, by: GroupBy, datasetNames: Map<number, string>): GroupValue[] {
  const text = (value: string | null | undefined): GroupValue[] => (value ? [{ key: `s:${value}`, label: value, order: value }] : [NONE]);
  switch (by) {
    case "study":
      return run.study_id != null ? [{ key: `id:${run.study_id}`, label: `#${run.study_id}`, order: run.study_id }] : [NONE];
    case "method":
      return text(run.method);
    case "objective":
      return text(run.objective);
    case "model":
      return text(run.model);
    case "dataset": {
      if (run.dataset_id === null) return [NONE];
      // By id: two datasets may share a name.
      const label = datasetNames.get(run.dataset_id) ?? `#${run.dataset_id}`;
      return [{ key: `id:${run.dataset_id}`, label, order: label }];
    }
    case "tag":
      return (run.tags ?? []).length ? [...new Set(run.tags)].flatMap(text) : [NONE];
    default: {
      const params = (run.config as { params?: Record<string, unknown> }).params;
      return [paramGroupValue(params?.[by.slice("param.".length)])];
    }
  }
}

const collator = new Intl.Collator(undefined, { numeric: true });

function compareGroupValues(a: GroupValue, b: GroupValue): number {
  if ((a.key === NONE.key) !== (b.key === NONE.key)) return a.key === NONE.key ? 1 : -1;
  if (typeof a.order === "number" && typeof b.order === "number") return a.order - b.order;
  if (typeof a.order !== typeof b.order) return typeof a.order === "number" ? -1 : 1;
  return collator.compare(String(a.order), String(b.order)) || collator.compare(a.key, b.key);
}

/**
 * The runs in groups by a field, the groups in the field's order (numbers by value, text naturally: lr 1e-4 before
 * 3e-4, "run 2" before "run 10") and the runs with no value last; a run with several tags is in each tag's group.
 */
export function groupRuns(runs: Run[], by: GroupBy, datasetNames: Map<number, string> = new Map()): RunGroup[] {
  const groups = new Map<string, { value: GroupValue; runs: Run[] }>();
  for (const run of runs) {
    for (const value of groupValues(run, by, datasetNames)) {
      const group = groups.get(value.key) ?? { value, runs: [] };
      group.runs.push(run);
      groups.set(value.key, group);
    }
  }
  return [...groups.values()]
    .sort((a, b) => compareGroupValues(a.value, b.value))
    .map(({ value, runs }) => ({ key: value.key, label: value.label, runs, succeeded: runs.filter((run) => run.status === "succeeded").length }));
}

/** The mean and sample standard deviation of some values (spread 0 for one); null for none. */
export function meanAndSpread(values: number[]): GroupFigure | null {
  const finite = values.filter(Number.isFinite);
  const n = finite.length;
  if (n === 0) return null;
  const mean = finite.reduce((sum, v) => sum + v, 0) / n;
  const spread = n > 1 ? Math.sqrt(finite.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1)) : 0;
  return { mean, spread, n };
}

/**
 * A figure over the group's succeeded runs only: a running run's loss at step 6, or a failed run's, is no result to
 * average; null when no succeeded run has the figure.
 */
export function groupFigure(group: RunGroup, value: (run: Run) => number | null): GroupFigure | null {
  return meanAndSpread(group.runs.filter((run) => run.status === "succeeded").map(value).filter((v): v is number => v !== null));
}

/**
 * "1.234 ± 0.05"; "1.2" for one run (a spread over one run is none); "—" for none; "(2 of 3)" after it when not
 * every run of the group counted (it did not succeed, or has no such figure).
 */
export function formatGroupFigure(figure: GroupFigure | null, groupSize: number, format: (value: number) => string): string {
  if (figure === null) return "—";
  const value = figure.n > 1 ? `${format(figure.mean)} ± ${format(figure.spread)}` : format(figure.mean);
  return figure.n < groupSize ? `${value} (${figure.n} of ${groupSize})` : value;
}

/** The group header's text: "method: lora · 4 runs (3 succeeded)", "r: 16 · 1 run (1 succeeded)". */
export function groupHeading(by: GroupBy, group: RunGroup): string {
  const field = by.startsWith("param.") ? by.slice("param.".length) : by;
  const count = `${group.runs.length} ${group.runs.length === 1 ? "run" : "runs"}`;
  return `${field}: ${group.label} · ${count} (${group.succeeded} succeeded)`;
}
