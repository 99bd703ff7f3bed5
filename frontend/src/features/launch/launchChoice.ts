// What the launch form starts with: a cloned run's choices, a next stage on a run's weights, else the bundled model and
// sample dataset.
import type { Dataset, Run, Schemas } from "../../api/client";

export const BUNDLED_MODEL = "tunelab-tiny";

export type Catalog = {
  objectives: Schemas["ObjectivePublic"][];
  methods: Schemas["MethodPublic"][];
  models: Schemas["ModelPublic"][];
  datasets: Dataset[];
};

/** A training queue the server declares, with the workers seen on it (GET /queues). */
export type Queue = Schemas["QueuePublic"];

export type LaunchChoice = {
  name: string;
  objective: string;
  method: string;
  model: string;
  dataset: string;
  queue: string;
  /** Params to start from instead of the method's defaults (a cloned run's). */
  seedParams: Record<string, unknown>;
};

export function methodsFor(catalog: Catalog, objective: string) {
  return catalog.methods.filter((m) => m.objectives.includes(objective));
}

/** Datasets an objective can train on, bundled ones first. */
export function datasetsFor(catalog: Catalog, objective: string): Dataset[] {
  const formats = catalog.objectives.find((o) => o.name === objective)?.dataset_formats ?? [];
  return catalog.datasets.filter((d) => formats.includes(d.format)).sort((a, b) => Number(b.bundled) - Number(a.bundled));
}

/** Keep the method and dataset when the objective changes if they still fit, else take the first that does. */
export function fitToObjective(catalog: Catalog, choice: LaunchChoice, objective: string): LaunchChoice {
  const methods = methodsFor(catalog, objective);
  const datasets = datasetsFor(catalog, objective);
  return {
    ...choice,
    objective,
    method: methods.some((m) => m.name === choice.method) ? choice.method : (methods[0]?.name ?? ""),
    dataset: datasets.some((d) => String(d.id) === choice.dataset) ? choice.dataset : String(datasets[0]?.id ?? ""),
  };
}

/**
 * The objective a run started from a run trained with `after` defaults to: the next stage the registry declares for it
 * (SFT after continued pretraining, DPO after SFT), else the same one.
 */
export function nextObjective(catalog: Catalog, after: string): string {
  const names = catalog.objectives.map((o) => o.name);
  const next = catalog.objectives.find((o) => o.name === after)?.next_stage ?? undefined;
  if (next !== undefined && names.includes(next)) return next;
  return names.includes(after) ? after : (names[0] ?? "");
}

/** Why a run's weights cannot be started from (the API's refusals the page can tell before a launch); null: they can. */
export function baseRunRefusal(run: Pick<Run, "id" | "name" | "status" | "external">): string | null {
  const described = `Run #${run.id} ${run.name}`;
  if (run.external) return `${described} was trained outside Tunelab: its weights are not here to start from.`;
  if (run.status !== "succeeded") return `${described} is ${run.status}: only a succeeded run's trained weights can be started from.`;
  return null;
}

/**
 * `source`: a run to clone (its own choices and params); `baseRun`: a run whose weights the new run starts from, on
 * its base model and queue, with its method and the objective of the next stage.
 */
export function initialChoice(catalog: Catalog, source?: Run, baseRun?: Run): LaunchChoice {
  if (source) {
    const params = source.config.params;
    const configDataset = source.config.dataset as { id?: number } | undefined;
    return {
      name: `${source.name} (clone)`,
      objective: source.objective,
      method: source.method,
      model: source.model,
      dataset: String(source.dataset_id ?? configDataset?.id ?? ""),
      queue: source.queue,
      seedParams: params && typeof params === "object" ? (params as Record<string, unknown>) : {},
    };
  }
  if (baseRun) {
    const objective = nextObjective(catalog, baseRun.objective);
    const start = { name: "", objective, method: baseRun.method, model: baseRun.model, dataset: "", queue: baseRun.queue, seedParams: {} };
    return fitToObjective(catalog, start, objective);
  }
  const objective = (catalog.objectives.find((o) => o.is_default) ?? catalog.objectives[0])?.name ?? "";
  const available = catalog.models.filter((m) => m.available);
  const model = available.find((m) => m.name === BUNDLED_MODEL) ?? available[0];
  const empty = { name: "", objective, method: "", model: model?.name ?? "", dataset: "", queue: "", seedParams: {} };
  return fitToObjective(catalog, empty, objective);
}

/**
 * The params a method starts from, with an objective, on a model: the method's defaults (for real models), the
 * objective's own fields and the method defaults it changes (DPO's gentler learning rate), then the model's own (the
 * bundled tiny model's demo values, given for SFT: their learning rate is scaled as the objective scales it). The
 * API fills in the same for params a launch leaves out.
 */
export function paramDefaults(
  method: Schemas["MethodPublic"] | undefined,
  model: Schemas["ModelPublic"] | undefined,
  objective?: Schemas["ObjectivePublic"],
): Record<string, unknown> {
  if (!method) return {};
  const modelDefaults: Record<string, unknown> = { ...model?.param_defaults?.[method.name] };
  if (objective && typeof modelDefaults.learning_rate === "number") {
    modelDefaults.learning_rate = Number((modelDefaults.learning_rate * objective.learning_rate_scale).toPrecision(3));
  }
  return { ...method.defaults, ...objective?.defaults, ...objective?.method_defaults[method.name], ...modelDefaults };
}

/** How the launch form names a queue: its name, the workers seen on it now, and whether it is the default. */
export function queueLabel(queue: Queue): string {
  const workers =
    queue.workers === null ? "workers unknown" : queue.workers === 0 ? "no worker now" : `${queue.workers} worker${queue.workers === 1 ? "" : "s"}`;
  return `${queue.name} · ${workers}${queue.default ? " · default" : ""}`;
}
