// The reward model run param as a choice among the runs that can reward, instead of an id to know by heart.
import type { Run } from "../../api/client";
import type { FieldSpec } from "./schemaFields";

export function rewardRunLabel(run: Pick<Run, "id" | "name" | "reward_accuracy">): string {
  const accuracy = run.reward_accuracy === null || run.reward_accuracy === undefined ? "" : ` · reward accuracy ${Math.round(run.reward_accuracy * 100)} %`;
  return `Run #${run.id} · ${run.name}${accuracy}`;
}

/**
 * The reward run field as a select of `runs` (newest first), keeping a `preset` id that is not among them (a cloned
 * run's, a URL's) as "Run #N" so it is neither lost nor silently replaced. The value sent stays the run's id.
 */
export function rewardRunField(field: FieldSpec, runs: Run[], preset: unknown, loadError?: string): FieldSpec {
  const options = [...runs]
    .sort((a, b) => b.id - a.id)
    .map((run) => ({ key: String(run.id), label: rewardRunLabel(run), value: run.id }));
  if (typeof preset === "number" && Number.isInteger(preset) && !runs.some((run) => run.id === preset)) {
    options.push({ key: String(preset), label: `Run #${preset}`, value: preset });
  }
  const description = loadError ? `${field.description ?? ""} (the runs could not be listed: ${loadError})`.trim() : field.description;
  return { ...field, kind: "select", options, noneLabel: "None", description };
}
