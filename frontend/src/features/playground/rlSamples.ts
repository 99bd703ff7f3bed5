// The pure half of the sampled-completions table: its reward columns and its rows grouped by step, newest first.
import type { RlSample } from "./api/queries";

/** One step's completions (an eval's, or a logged training batch's). */
export type StepGroup = { step: number; split: RlSample["split"]; rows: RlSample[] };

/** Each reward component some row carries, in the order they first appear: a column each. */
export function rewardColumns(rows: readonly RlSample[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const name of Object.keys(row.rewards)) names.add(name);
  return [...names];
}

/** The rows by step (and split), newest step first, each group's rows in the order the run wrote them. */
export function groupByStep(rows: readonly RlSample[]): StepGroup[] {
  const groups = new Map<string, StepGroup>();
  for (const row of rows) {
    const key = `${row.step}:${row.split}`;
    const group = groups.get(key) ?? { step: row.step, split: row.split, rows: [] };
    group.rows.push(row);
    groups.set(key, group);
  }
  // Stable: a step's eval and train groups keep the order the rows came in.
  return [...groups.values()].sort((a, b) => b.step - a.step);
}

/** "0.750", "-1.200"; "—" for a reward that is not recorded (a completion the reward could not score). */
export function formatReward(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : value.toFixed(3);
}
