// The pure half of the study form's params: which params a grid may vary (the union of the picked methods' params
// for the objective, less those a study keeps shared or sets itself), how they are bounded, and the values typed
// for them parsed and checked against their JSON Schema before anything is sent.
import type { Schemas } from "../../api/client";
import type { JsonSchema } from "../launch";
import type { GridRow } from "./plan";

type Method = Schemas["MethodPublic"];
type Objective = Schemas["ObjectivePublic"];
type Model = Schemas["ModelPublic"];

/** A grid value as the API takes it (StudyCreate.grid). */
export type GridValue = number | string | boolean;

// As backend/tunelab/services/evaluation/studies.py refuses them in a grid: the budget and the seeds are the study's; the eval
// split is one for the whole study; a param that changes the tokens of a step keeps the budget matched only when the
// budget is in tokens.
export const BUDGET_PARAMS: ReadonlySet<string> = new Set(["max_steps", "num_train_epochs", "seed"]);
export const SHARED_ONLY_PARAMS: ReadonlySet<string> = new Set([...BUDGET_PARAMS, "eval_split"]);
export const TOKENS_PER_STEP_PARAMS: ReadonlySet<string> = new Set([
  "per_device_train_batch_size",
  "gradient_accumulation_steps",
  "max_length",
  "num_processes",
]);

/** The params every run of a study shares, set on the form (the budget and the eval split hang on them). */
export const SHARED_FIELDS = ["max_length", "per_device_train_batch_size", "eval_split"] as const;

/** "other": lists and objects, which a comma-separated grid cannot hold. */
export type ParamKind = "integer" | "number" | "boolean" | "select" | "string" | "other";

export type ParamSpec = {
  name: string;
  kind: ParamKind;
  title: string;
  description?: string;
  default: unknown;
  min?: number;
  max?: number;
  /** The bound itself is not allowed (exclusiveMinimum / exclusiveMaximum). */
  minExclusive?: boolean;
  maxExclusive?: boolean;
  /** For "select": the values allowed (a Literal's enum). */
  options?: unknown[];
};

const isNull = (s: JsonSchema) => s.type === "null";

/** One schema property as a study reads it: the title, help, default and bounds the launch form shows for it. */
export function readParam(name: string, schema: JsonSchema): ParamSpec {
  const concrete = (schema.anyOf ?? schema.oneOf ?? [schema]).filter((s) => !isNull(s));
  const base = { name, title: schema.title ?? name, description: schema.description, default: schema.default };
  if (concrete.length !== 1) return { ...base, kind: "other" };
  const only = concrete[0];
  if (only.enum) return { ...base, kind: "select", options: only.enum };
  switch (only.type) {
    case "boolean":
    case "string":
      return { ...base, kind: only.type };
    case "integer":
    case "number": {
      const min = only.minimum ?? only.exclusiveMinimum;
      const max = only.maximum ?? only.exclusiveMaximum;
      return {
        ...base,
        kind: only.type,
        ...(min !== undefined && { min, minExclusive: only.minimum === undefined }),
        ...(max !== undefined && { max, maxExclusive: only.maximum === undefined }),
      };
    }
    default:
      return { ...base, kind: "other" };
  }
}

/** Every property of a params_schema, in its order. */
export function readParams(schema: unknown): ParamSpec[] {
  const properties = (schema as JsonSchema | undefined)?.properties ?? {};
  return Object.entries(properties).map(([name, property]) => readParam(name, property));
}

/** The param names a method has for an objective (the objective's own beside the method's), as the API checks a grid. */
export function paramNamesOf(method: Method | undefined, objective: Objective | undefined): string[] {
  return [...readParams(objective?.params_schema), ...readParams(method?.params_schema)].map((p) => p.name);
}

/**
 * The defaults a run of `method` starts from with `objective` on `model`, as the API fills them in (the launch form's
 * paramDefaults): the method's, the objective's and the method defaults it changes, then the model's own, whose
 * learning rate is given for SFT and scaled as the objective scales it.
 */
export function methodDefaults(method: Method, model: Model | undefined, objective: Objective | undefined): Record<string, unknown> {
  const modelDefaults: Record<string, unknown> = { ...model?.param_defaults?.[method.name] };
  if (objective && typeof modelDefaults.learning_rate === "number") {
    modelDefaults.learning_rate = Number((modelDefaults.learning_rate * objective.learning_rate_scale).toPrecision(3));
  }
  return { ...method.defaults, ...objective?.defaults, ...objective?.method_defaults[method.name], ...modelDefaults };
}

/** A param a grid may vary, merged over the picked methods that have it. */
export type GridParam = ParamSpec & {
  /** The picked methods that have it, in the order they were picked: the others are not varied by it. */
  methods: string[];
  /** Each of those methods' default. */
  defaults: { method: string; value: unknown }[];
  /** Varying it changes the tokens of a step: the API takes it only with a budget in training tokens. */
  needsTokenBudget: boolean;
};

/** The stricter of two bounds of the same param (methods may bound it differently). */
function tighten(spec: GridParam, other: ParamSpec): GridParam {
  const out = { ...spec };
  if (other.min !== undefined && (out.min === undefined || other.min > out.min || (other.min === out.min && other.minExclusive))) {
    out.min = other.min;
    out.minExclusive = other.minExclusive;
  }
  if (other.max !== undefined && (out.max === undefined || other.max < out.max || (other.max === out.max && other.maxExclusive))) {
    out.max = other.max;
    out.maxExclusive = other.maxExclusive;
  }
  return out;
}

/**
 * The params a study's grid may vary: the union of the picked methods' params for the objective (the objective's own
 * first, each picked method has them), without the budget, the seed and the eval split, nor lists and objects.
 * `defaultsOf(method)` gives a method's defaults (methodDefaults).
 */
export function gridParams(
  objective: Objective | undefined,
  picked: readonly Method[],
  defaultsOf: (method: Method) => Record<string, unknown>,
): GridParam[] {
  const byName = new Map<string, GridParam>();
  const objectiveParams = readParams(objective?.params_schema);
  for (const method of picked) {
    const defaults = defaultsOf(method);
    for (const spec of [...objectiveParams, ...readParams(method.params_schema)]) {
      if (SHARED_ONLY_PARAMS.has(spec.name) || spec.kind === "other") continue;
      const value = spec.name in defaults ? defaults[spec.name] : spec.default;
      const known = byName.get(spec.name);
      if (known && known.methods.includes(method.name)) continue;
      const merged: GridParam = known
        ? tighten(known, spec)
        : { ...spec, methods: [], defaults: [], needsTokenBudget: TOKENS_PER_STEP_PARAMS.has(spec.name) };
      merged.methods = [...merged.methods, method.name];
      merged.defaults = [...merged.defaults, { method: method.name, value }];
      byName.set(spec.name, merged);
    }
  }
  return [...byName.values()];
}

/** How the param picker names a param: its title and which picked methods have it ("Rank (r) — lora, dora"). */
export function gridParamLabel(param: GridParam, budgetInTokens: boolean): string {
  const label = `${param.title} — ${param.methods.join(", ")}`;
  return param.needsTokenBudget && !budgetInTokens ? `${label} (needs a token budget)` : label;
}

const show = (value: unknown) => (value === null || value === undefined ? "none" : String(value));

/** The values a param may take: "1–1024", "> 0, ≤ 1", "linear, cosine", "true, false"; null when unbounded. */
export function boundsText(spec: ParamSpec): string | null {
  if (spec.kind === "select") return (spec.options ?? []).map(show).join(", ");
  if (spec.kind === "boolean") return "true, false";
  if (spec.kind !== "integer" && spec.kind !== "number") return null;
  if (spec.min !== undefined && spec.max !== undefined && !spec.minExclusive && !spec.maxExclusive) return `${spec.min}–${spec.max}`;
  const parts: string[] = [];
  if (spec.min !== undefined) parts.push(`${spec.minExclusive ? ">" : "≥"} ${spec.min}`);
  if (spec.max !== undefined) parts.push(`${spec.maxExclusive ? "<" : "≤"} ${spec.max}`);
  return parts.length > 0 ? parts.join(", ") : null;
}

/** The default and bounds of a grid param: "default 8 · 1–1024", or each method's default where they differ. */
export function valuesHint(param: GridParam): string {
  const distinct = [...new Set(param.defaults.map((d) => JSON.stringify(d.value ?? null)))];
  const defaults =
    distinct.length <= 1
      ? `default ${show(param.defaults[0]?.value ?? param.default)}`
      : `default ${param.defaults.map((d) => `${show(d.value)} (${d.method})`).join(", ")}`;
  const bounds = boundsText(param);
  return bounds ? `${defaults} · ${bounds}` : defaults;
}

type Parsed = { value: GridValue } | { error: string };

function parseOne(spec: ParamSpec, text: string): Parsed {
  switch (spec.kind) {
    case "integer":
    case "number": {
      const value = Number(text);
      if (!Number.isFinite(value)) return { error: `"${text}" is not a number` };
      if (spec.kind === "integer" && !Number.isInteger(value)) return { error: `"${text}" is not a whole number` };
      const below = spec.min !== undefined && (spec.minExclusive ? value <= spec.min : value < spec.min);
      const above = spec.max !== undefined && (spec.maxExclusive ? value >= spec.max : value > spec.max);
      return below || above ? { error: `${text} is out of bounds (${boundsText(spec)})` } : { value };
    }
    case "boolean":
      return text === "true" || text === "false" ? { value: text === "true" } : { error: `"${text}" is not true or false` };
    case "select": {
      const option = spec.options?.find((o) => String(o) === text);
      return option === undefined ? { error: `"${text}" is not one of ${boundsText(spec)}` } : { value: option as GridValue };
    }
    default:
      return { value: text };
  }
}

/** Comma-separated values typed for a grid param, typed and checked against its schema: the first problem, if any. */
export function parseGridValues(spec: ParamSpec, text: string): { values: GridValue[] } | { error: string } {
  const parts = text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
  if (parts.length === 0) return { error: "Give the values to try, comma-separated" };
  const values: GridValue[] = [];
  for (const part of parts) {
    const parsed = parseOne(spec, part);
    if ("error" in parsed) return parsed;
    if (values.includes(parsed.value)) return { error: `${part} is given twice` };
    values.push(parsed.value);
  }
  return { values };
}

/**
 * The grid a study sends, from its rows: each row with a param gives its values; a row's problem (no param for its
 * values, a param varied twice or no picked method has, one that needs a token budget, a value out of bounds) is
 * keyed by the row's index. Empty rows are skipped.
 */
export function checkGrid(
  rows: readonly GridRow[],
  params: readonly GridParam[],
  budgetInTokens: boolean,
): { grid: Record<string, GridValue[]>; errors: Record<number, string> } {
  const grid: Record<string, GridValue[]> = {};
  const errors: Record<number, string> = {};
  const seen = new Map<string, number>();
  rows.forEach((row, index) => {
    if (!row.param) {
      if (row.values.trim()) errors[index] = "Choose the param these values are for";
      return;
    }
    const param = params.find((p) => p.name === row.param);
    const earlier = seen.get(row.param);
    seen.set(row.param, earlier ?? index);
    if (earlier !== undefined) errors[index] = `${row.param} is already varied in row ${earlier + 1}`;
    else if (!param) errors[index] = `None of the picked methods has ${row.param}`;
    else if (param.needsTokenBudget && !budgetInTokens) {
      errors[index] = `${param.title} changes the tokens of a step: give the budget in training tokens to vary it`;
    } else {
      const parsed = parseGridValues(param, row.values);
      if ("error" in parsed) errors[index] = parsed.error;
      else grid[row.param] = parsed.values;
    }
  });
  return { grid, errors };
}

/**
 * The specs of the params every run shares (SHARED_FIELDS), from the objective's schema, else the first of `methods`
 * that has them.
 */
export function sharedParams(objective: Objective | undefined, methods: readonly Method[]): ParamSpec[] {
  const specs = [...readParams(objective?.params_schema), ...methods.flatMap((m) => readParams(m.params_schema))];
  return SHARED_FIELDS.flatMap((name) => specs.find((spec) => spec.name === name) ?? []);
}

/** A shared param's typed number, as the launch form parses one (bounds are the API's to check, at the field). */
export function parseSharedValue(spec: ParamSpec, text: string): { value: number } | { error: string } {
  const trimmed = text.trim();
  const value = Number(trimmed);
  if (trimmed === "" || !Number.isFinite(value)) return { error: "Enter a number" };
  if (spec.kind === "integer" && !Number.isInteger(value)) return { error: "Enter a whole number" };
  return { value };
}
