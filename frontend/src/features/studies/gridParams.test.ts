import { describe, expect, it } from "vitest";

import studiesService from "../../../../backend/tunelab/services/evaluation/studies.py?raw";
import type { Schemas } from "../../api/client";
import {
  BUDGET_PARAMS,
  boundsText,
  checkGrid,
  gridParamLabel,
  gridParams,
  methodDefaults,
  paramNamesOf,
  parseGridValues,
  parseSharedValue,
  readParam,
  readParams,
  sharedParams,
  SHARED_ONLY_PARAMS,
  TOKENS_PER_STEP_PARAMS,
  valuesHint,
  type GridParam,
  type ParamSpec,
} from "./gridParams";

// Shaped as GET /methods publishes them (Pydantic's JSON Schema of each method's params).
const shared = {
  max_steps: { anyOf: [{ minimum: 0, type: "integer" }, { type: "null" }], default: 60, title: "Max steps" },
  num_train_epochs: { default: 1, exclusiveMinimum: 0, maximum: 100, title: "Epochs", type: "number" },
  seed: { default: 42, minimum: 0, title: "Seed", type: "integer" },
  learning_rate: { default: 0.001, exclusiveMinimum: 0, maximum: 1, title: "Learning rate", description: "Peak learning rate of AdamW", type: "number" },
  lr_scheduler_type: { default: "linear", enum: ["linear", "cosine"], title: "LR schedule", type: "string" },
  per_device_train_batch_size: { default: 8, minimum: 1, maximum: 1024, title: "Batch size per device", type: "integer" },
  max_length: { default: 256, minimum: 8, maximum: 131072, title: "Max length (tokens)", description: "Longest tokenized example", type: "integer" },
  eval_split: { default: 0.1, minimum: 0, exclusiveMaximum: 1, title: "Eval split", description: "Fraction held out", type: "number" },
  gradient_checkpointing: { default: false, title: "Gradient checkpointing", type: "boolean" },
  zero_stage: { default: 0, enum: [0, 2, 3], title: "DeepSpeed ZeRO stage", type: "integer" },
};
const loraOwn = {
  r: { default: 8, minimum: 1, maximum: 1024, title: "Rank (r)", description: "Rank of the update matrices", type: "integer" },
  target_modules: { anyOf: [{ items: { type: "string" }, type: "array" }, { type: "string" }], default: "all-linear", title: "Target modules" },
};

function method(name: string, own: Record<string, unknown>, defaults: Record<string, unknown> = {}): Schemas["MethodPublic"] {
  return {
    name, title: name, description: name, objectives: ["sft", "dpo"], peft: name !== "full", requires_cuda: false,
    params_schema: { type: "object", properties: { ...shared, ...own } }, defaults,
  };
}

const lora = method("lora", loraOwn, { learning_rate: 0.0002, r: 8 });
const dora = method("dora", loraOwn, { learning_rate: 0.0002, r: 8 });
const full = method("full", {}, { learning_rate: 0.001 });

function objective(name: string, properties: Record<string, unknown> = {}, extra: Partial<Schemas["ObjectivePublic"]> = {}): Schemas["ObjectivePublic"] {
  return {
    name, title: name.toUpperCase(), description: name, dataset_formats: ["instruction"], metric_keys: [], reports_perplexity: true,
    is_default: name === "sft", learning_rate_scale: 1, next_stage: null, params_schema: { type: "object", properties }, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {}, ...extra,
  };
}

const sft = objective("sft");
const dpo = objective("dpo", { beta: { default: 0.1, exclusiveMinimum: 0, maximum: 10, title: "Beta", type: "number" } });
const ownDefaults = (m: Schemas["MethodPublic"]) => m.defaults;

function param(name: string, params: GridParam[]): GridParam {
  const found = params.find((p) => p.name === name);
  if (!found) throw new Error(`no grid param ${name}`);
  return found;
}

describe("what a study may vary, as the API decides it", () => {
  it("mirrors the params backend/tunelab/services/evaluation/studies.py keeps out of a grid or ties to a token budget", () => {
    const names = (pattern: RegExp) => [...(pattern.exec(studiesService)?.[1] ?? "").matchAll(/"(\w+)"/g)].map((m) => m[1]).sort();
    const budget = names(/^BUDGET_PARAMS = frozenset\(\{([^}]*)\}\)/m);
    expect(budget.length).toBeGreaterThan(0);
    expect([...BUDGET_PARAMS].sort()).toEqual(budget);
    expect([...SHARED_ONLY_PARAMS].sort()).toEqual([...budget, ...names(/^SHARED_ONLY_PARAMS = BUDGET_PARAMS \| \{([^}]*)\}/m)].sort());
    expect([...TOKENS_PER_STEP_PARAMS].sort()).toEqual(names(/^TOKENS_PER_STEP_PARAMS = frozenset\(\{([^}]*)\}\)/m));
  });
});

describe("readParam", () => {
  it("reads a bounded integer, an exclusive bound and a nullable integer", () => {
    expect(readParam("r", loraOwn.r)).toEqual({
      name: "r", kind: "integer", title: "Rank (r)", description: "Rank of the update matrices", default: 8,
      min: 1, minExclusive: false, max: 1024, maxExclusive: false,
    });
    expect(readParam("learning_rate", shared.learning_rate)).toMatchObject({ kind: "number", min: 0, minExclusive: true, max: 1, maxExclusive: false });
    expect(readParam("eval_split", shared.eval_split)).toMatchObject({ min: 0, minExclusive: false, max: 1, maxExclusive: true });
    expect(readParam("max_steps", shared.max_steps)).toMatchObject({ kind: "integer", min: 0, default: 60 });
  });

  it("reads enums as options, booleans and strings, and lists as what a grid cannot hold", () => {
    expect(readParam("zero_stage", shared.zero_stage)).toMatchObject({ kind: "select", options: [0, 2, 3] });
    expect(readParam("gradient_checkpointing", shared.gradient_checkpointing).kind).toBe("boolean");
    expect(readParam("text", { type: "string" })).toMatchObject({ kind: "string", title: "text" });
    expect(readParam("target_modules", loraOwn.target_modules).kind).toBe("other");
    expect(readParams(undefined)).toEqual([]);
  });
});

describe("gridParams", () => {
  it("is the union of the picked methods' params, each labelled with its title and the methods that have it", () => {
    const params = gridParams(sft, [lora, full, dora], ownDefaults);
    expect(gridParamLabel(param("r", params), false)).toBe("Rank (r) — lora, dora");
    expect(gridParamLabel(param("learning_rate", params), false)).toBe("Learning rate — lora, full, dora");
    // The budget, the seed and the eval split are the study's; a list is no grid value.
    for (const name of ["max_steps", "num_train_epochs", "seed", "eval_split", "target_modules"]) {
      expect(params.map((p) => p.name)).not.toContain(name);
    }
    expect(gridParams(sft, [], ownDefaults)).toEqual([]);
  });

  it("puts the objective's own params first, had by every picked method", () => {
    const params = gridParams(dpo, [lora, full], ownDefaults);
    expect(params[0]).toMatchObject({ name: "beta", methods: ["lora", "full"] });
    expect(paramNamesOf(full, dpo)).toContain("beta");
    expect(paramNamesOf(full, sft)).not.toContain("beta");
  });

  it("says which params need a token budget", () => {
    const params = gridParams(sft, [lora], ownDefaults);
    expect(param("per_device_train_batch_size", params).needsTokenBudget).toBe(true);
    expect(param("max_length", params).needsTokenBudget).toBe(true);
    expect(param("r", params).needsTokenBudget).toBe(false);
    expect(gridParamLabel(param("max_length", params), false)).toBe("Max length (tokens) — lora (needs a token budget)");
    expect(gridParamLabel(param("max_length", params), true)).toBe("Max length (tokens) — lora");
  });

  it("keeps each method's default and the strictest bounds when methods bound a param differently", () => {
    const narrow = method("narrow", { r: { ...loraOwn.r, maximum: 64 } }, { r: 4 });
    const r = param("r", gridParams(sft, [lora, narrow], ownDefaults));
    expect(r).toMatchObject({ max: 64, defaults: [{ method: "lora", value: 8 }, { method: "narrow", value: 4 }] });
    expect(valuesHint(r)).toBe("default 8 (lora), 4 (narrow) · 1–64");
  });
});

describe("methodDefaults", () => {
  it("takes the method's defaults, the objective's changes and the model's own, its learning rate scaled", () => {
    const tiny = {
      name: "tiny", title: "Tiny", description: "", available: true, how_to_get: null, path: null, source: "bundled",
      param_defaults: { lora: { learning_rate: 0.005, lora_dropout: 0 } },
    } as Schemas["ModelPublic"];
    const scaled = objective("dpo", {}, { learning_rate_scale: 0.1, defaults: { beta: 0.1 }, method_defaults: { lora: { r: 16 } } });
    expect(methodDefaults(lora, tiny, scaled)).toEqual({ learning_rate: 0.0005, r: 16, beta: 0.1, lora_dropout: 0 });
    expect(methodDefaults(full, undefined, sft)).toEqual({ learning_rate: 0.001 });
  });
});

describe("boundsText and valuesHint", () => {
  const spec = (extra: Partial<ParamSpec>): ParamSpec => ({ name: "x", title: "X", kind: "number", default: 1, ...extra });

  it("writes inclusive bounds as a range and the others as comparisons", () => {
    expect(boundsText(spec({ kind: "integer", min: 1, max: 256 }))).toBe("1–256");
    expect(boundsText(spec({ min: 0, minExclusive: true, max: 1 }))).toBe("> 0, ≤ 1");
    expect(boundsText(spec({ min: 0, max: 1, maxExclusive: true }))).toBe("≥ 0, < 1");
    expect(boundsText(spec({ min: 8 }))).toBe("≥ 8");
    expect(boundsText(spec({}))).toBeNull();
    expect(boundsText(spec({ kind: "select", options: ["linear", "cosine"] }))).toBe("linear, cosine");
    expect(boundsText(spec({ kind: "boolean" }))).toBe("true, false");
    expect(boundsText(spec({ kind: "string" }))).toBeNull();
  });

  it("shows the default the picked methods share, then the bounds", () => {
    const params = gridParams(sft, [lora, dora], ownDefaults);
    expect(valuesHint(param("r", params))).toBe("default 8 · 1–1024");
    expect(valuesHint(param("lr_scheduler_type", params))).toBe("default linear · linear, cosine");
    expect(valuesHint(param("learning_rate", gridParams(sft, [lora, full], ownDefaults)))).toBe(
      "default 0.0002 (lora), 0.001 (full) · > 0, ≤ 1",
    );
  });
});

describe("parseGridValues", () => {
  const params = gridParams(sft, [lora], ownDefaults);

  it("types the values by the param's schema", () => {
    expect(parseGridValues(param("r", params), " 4, 8 ,16,")).toEqual({ values: [4, 8, 16] });
    expect(parseGridValues(param("learning_rate", params), "1e-4, 3e-4")).toEqual({ values: [0.0001, 0.0003] });
    expect(parseGridValues(param("lr_scheduler_type", params), "linear, cosine")).toEqual({ values: ["linear", "cosine"] });
    expect(parseGridValues(param("zero_stage", params), "0, 2")).toEqual({ values: [0, 2] });
    expect(parseGridValues(param("gradient_checkpointing", params), "true, false")).toEqual({ values: [true, false] });
  });

  it("refuses values outside the schema's bounds, of the wrong type, repeated or missing", () => {
    expect(parseGridValues(param("r", params), "8, 2048")).toEqual({ error: "2048 is out of bounds (1–1024)" });
    expect(parseGridValues(param("r", params), "0")).toEqual({ error: "0 is out of bounds (1–1024)" });
    expect(parseGridValues(param("learning_rate", params), "0")).toEqual({ error: "0 is out of bounds (> 0, ≤ 1)" });
    expect(parseGridValues(param("learning_rate", params), "1")).toEqual({ values: [1] });
    expect(parseGridValues(param("r", params), "4.5")).toEqual({ error: '"4.5" is not a whole number' });
    expect(parseGridValues(param("r", params), "four")).toEqual({ error: '"four" is not a number' });
    expect(parseGridValues(param("lr_scheduler_type", params), "cosine, step")).toEqual({ error: '"step" is not one of linear, cosine' });
    expect(parseGridValues(param("gradient_checkpointing", params), "yes")).toEqual({ error: '"yes" is not true or false' });
    expect(parseGridValues(param("r", params), "8, 8.0")).toEqual({ error: "8.0 is given twice" });
    expect(parseGridValues(param("r", params), " , ")).toEqual({ error: "Give the values to try, comma-separated" });
  });
});

describe("checkGrid", () => {
  const params = gridParams(sft, [lora, full], ownDefaults);

  it("gives the grid of the rows with a param, skipping empty rows", () => {
    const rows = [{ param: "r", values: "4, 8" }, { param: "", values: "" }, { param: "learning_rate", values: "1e-3" }];
    expect(checkGrid(rows, params, false)).toEqual({ grid: { r: [4, 8], learning_rate: [0.001] }, errors: {} });
  });

  it("keys each row's problem by its index", () => {
    const rows = [
      { param: "r", values: "4, 4096" },
      { param: "", values: "1, 2" },
      { param: "r", values: "16" },
      { param: "num_virtual_tokens", values: "8" },
    ];
    expect(checkGrid(rows, params, false)).toEqual({
      grid: {},
      errors: {
        0: "4096 is out of bounds (1–1024)",
        1: "Choose the param these values are for",
        2: "r is already varied in row 1",
        3: "None of the picked methods has num_virtual_tokens",
      },
    });
  });

  it("takes a param that changes the tokens of a step only with a budget in tokens", () => {
    const rows = [{ param: "per_device_train_batch_size", values: "4, 8" }];
    expect(checkGrid(rows, params, false).errors).toEqual({
      0: "Batch size per device changes the tokens of a step: give the budget in training tokens to vary it",
    });
    expect(checkGrid(rows, params, true)).toEqual({ grid: { per_device_train_batch_size: [4, 8] }, errors: {} });
  });
});

describe("shared params", () => {
  it("are read from the objective's schema, else the first method that has them", () => {
    const own = objective("own", { max_length: { ...shared.max_length, title: "Block length" } });
    expect(sharedParams(sft, [full, lora]).map((s) => [s.name, s.title])).toEqual([
      ["max_length", "Max length (tokens)"],
      ["per_device_train_batch_size", "Batch size per device"],
      ["eval_split", "Eval split"],
    ]);
    expect(sharedParams(own, [lora])[0].title).toBe("Block length");
    expect(sharedParams(sft, [])).toEqual([]);
  });

  it("parse as the launch form parses a number, leaving the bounds to the API", () => {
    const [maxLength, , evalSplit] = sharedParams(sft, [lora]);
    expect(parseSharedValue(maxLength, " 64 ")).toEqual({ value: 64 });
    expect(parseSharedValue(maxLength, "64.5")).toEqual({ error: "Enter a whole number" });
    expect(parseSharedValue(maxLength, "")).toEqual({ error: "Enter a number" });
    expect(parseSharedValue(evalSplit, "5")).toEqual({ value: 5 });
  });
});
