// The pure half of the pipeline form and page: what each stage may train on, starts from and is rewarded by, its
// payload, and where the API's stage errors (stages.N.field) belong.
import type { Dataset, Schemas } from "../../api/client";
import type { StageSpec, StageTemplate } from "./api/queries";

type Method = Schemas["MethodPublic"];

/** "Stage 2 · Reward model": a stage's fieldset legend and card heading. */
export function stageLabel(position: number, name: string): string {
  return `Stage ${position + 1} · ${name}`;
}

/** The stage number (1 for the first) whose weights the stage at `position` starts from; 0: the pipeline's model. */
export function startStage(position: number, startFrom: number | null | undefined): number {
  return startFrom ?? position;
}

/** What the stage at `position` starts from, in words: "starts from stage 1's weights (SFT)". */
export function startsFromText(names: readonly string[], position: number, startFrom: number | null | undefined): string {
  const from = startStage(position, startFrom);
  if (from === 0) return "starts from the base model";
  return `starts from stage ${from}'s weights (${names[from - 1] ?? "?"})`;
}

/** Who scores the stage's completions, in words; null for a stage no model rewards. */
export function rewardedByText(names: readonly string[], rewardFrom: number | null | undefined): string | null {
  if (!rewardFrom) return null;
  return `rewarded by stage ${rewardFrom}'s model (${names[rewardFrom - 1] ?? "?"})`;
}

/** Datasets in one of the stage's formats, bundled ones first (as the launch form lists them). */
export function datasetsForFormats(datasets: readonly Dataset[], formats: readonly string[]): Dataset[] {
  return datasets.filter((d) => formats.includes(d.format)).sort((a, b) => Number(b.bundled) - Number(a.bundled));
}

/** The dataset a stage starts with: the template's suggestion by name (a bundled one first), else the first that fits. */
export function initialDatasetId(datasets: readonly Dataset[], stage: Pick<StageTemplate, "dataset_formats" | "suggested_dataset">): string {
  const fits = datasetsForFormats(datasets, stage.dataset_formats);
  const suggested = stage.suggested_dataset ? fits.find((d) => d.name === stage.suggested_dataset) : undefined;
  return String((suggested ?? fits[0])?.id ?? "");
}

/** Methods that train the objective. */
export function methodsForObjective(methods: readonly Method[], objective: string): Method[] {
  return methods.filter((m) => m.objectives.includes(objective));
}

/** A stage as the form holds it. */
export type StageDraft = {
  name: string;
  objective: string;
  method: string;
  datasetId: string;
  startFrom: number | null;
  rewardFrom: number | null;
};

export function draftOf(stage: StageTemplate, datasets: readonly Dataset[]): StageDraft {
  return {
    name: stage.name,
    objective: stage.objective,
    method: stage.method,
    datasetId: initialDatasetId(datasets, stage),
    startFrom: stage.start_from,
    rewardFrom: stage.reward_from,
  };
}

/** The stage as POST /pipelines takes it; start_from and reward_from only where the template sets them. */
export function stagePayload(draft: StageDraft, params: Record<string, unknown>): StageSpec {
  return {
    name: draft.name,
    objective: draft.objective,
    method: draft.method,
    dataset_id: Number(draft.datasetId),
    params,
    ...(draft.startFrom !== null && { start_from: draft.startFrom }),
    ...(draft.rewardFrom !== null && { reward_from: draft.rewardFrom }),
  };
}

const STAGE_PATH = /^stages\.(\d+)(?:\.(.+))?$/;

export type SplitErrors = {
  /** By stage position: messages keyed by their whole path (`stages.1.params.beta`), as the stage's inputs are named. */
  byStage: Record<number, Record<string, string>>;
  /** Messages of the pipeline's own fields (name, model, queue) and any others. */
  rest: Record<string, string>;
};

/** Sort field errors into those of each stage and the rest. */
export function splitStageErrors(errors: Record<string, string>): SplitErrors {
  const byStage: Record<number, Record<string, string>> = {};
  const rest: Record<string, string> = {};
  for (const [path, message] of Object.entries(errors)) {
    const match = STAGE_PATH.exec(path);
    if (match) (byStage[Number(match[1])] ??= {})[path] = message;
    else rest[path] = message;
  }
  return { byStage, rest };
}

/** The pipeline list's compact chain: "SFT → Reward model → GRPO". */
export function chainText(stages: readonly { name: string }[]): string {
  return stages.map((stage) => stage.name).join(" → ");
}

/** The final stages' runs of the picked pipelines, in the list's order: what the compare view opens. */
export function finalRunIds(pipelines: readonly { id: number; final_run_id: number | null }[], picked: ReadonlySet<number>): number[] {
  return pipelines.flatMap((p) => (picked.has(p.id) && p.final_run_id !== null ? [p.final_run_id] : []));
}
