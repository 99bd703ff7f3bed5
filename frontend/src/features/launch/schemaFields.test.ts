import { describe, expect, it } from "vitest";

import { assignFieldErrors, describeField, describeSchema, toFormValues, toParams } from "./schemaFields";
import type { JsonSchema } from "./schemaFields";

// Shapes copied from GET /api/v1/methods (Pydantic's JSON Schema for the method configs).
const schema: JsonSchema = {
  type: "object",
  properties: {
    max_steps: {
      anyOf: [{ minimum: 0, type: "integer" }, { type: "null" }],
      default: 60,
      description: "Optimizer steps to run",
      title: "Max Steps",
    },
    learning_rate: {
      default: 0.005,
      description: "Peak learning rate of AdamW",
      exclusiveMinimum: 0,
      maximum: 1.0,
      title: "Learning Rate",
      type: "number",
    },
    warmup_ratio: { default: 0.0, exclusiveMaximum: 1, minimum: 0, title: "Warmup Ratio", type: "number" },
    lr_scheduler_type: { default: "linear", enum: ["linear", "cosine"], title: "Lr Scheduler Type", type: "string" },
    precision: { anyOf: [{ const: "fp32" }, { const: "bf16" }], default: "fp32", title: "Precision" },
    gradient_checkpointing: { default: false, title: "Gradient Checkpointing", type: "boolean" },
    target_modules: {
      anyOf: [{ items: { type: "string" }, type: "array" }, { type: "string" }],
      default: "all-linear",
      title: "Target Modules",
    },
    ia3_modules: { anyOf: [{ items: { type: "string" }, type: "array" }, { type: "null" }], default: null },
    prompt_tuning_init_text: { anyOf: [{ type: "string" }, { type: "null" }], default: null, title: "Init Text" },
    extra: { type: "object", default: { a: 1 } },
  },
};

const fields = describeSchema(schema);
const field = (name: string) => fields.find((f) => f.name === name)!;

describe("describeField", () => {
  it("reads a bounded float with an exclusive minimum", () => {
    expect(field("learning_rate")).toMatchObject({
      kind: "number",
      title: "Learning Rate",
      description: "Peak learning rate of AdamW",
      default: 0.005,
      min: 0,
      minExclusive: true,
      max: 1,
      maxExclusive: false,
      step: 0.001,
      nullable: false,
    });
  });

  it("reads an optional integer as a nullable integer", () => {
    expect(field("max_steps")).toMatchObject({ kind: "integer", min: 0, step: 1, nullable: true, default: 60 });
    expect(field("max_steps").max).toBeUndefined();
  });

  it("picks a step for a float whose default is zero from its bounds", () => {
    expect(field("warmup_ratio")).toMatchObject({ kind: "number", min: 0, max: 1, maxExclusive: true, step: 0.01 });
  });

  it("turns enums and Literal (anyOf const) into selects", () => {
    expect(field("lr_scheduler_type").kind).toBe("select");
    expect(field("lr_scheduler_type").options?.map((o) => o.value)).toEqual(["linear", "cosine"]);
    expect(field("precision").options?.map((o) => o.label)).toEqual(["fp32", "bf16"]);
  });

  it("recognises booleans, strings, lists and falls back to JSON", () => {
    expect(field("gradient_checkpointing").kind).toBe("boolean");
    expect(field("prompt_tuning_init_text")).toMatchObject({ kind: "string", nullable: true });
    expect(field("target_modules")).toMatchObject({ kind: "list", allowsString: true, nullable: false });
    expect(field("ia3_modules")).toMatchObject({ kind: "list", allowsString: false, nullable: true, title: "Ia3 modules" });
    expect(field("extra").kind).toBe("json");
  });

  it("marks required properties", () => {
    expect(describeField("x", { type: "integer" }, true).required).toBe(true);
  });
});

describe("toParams", () => {
  const defaults = { max_steps: 60, learning_rate: 0.005, target_modules: "all-linear" };

  it("sends nothing when nothing changed", () => {
    expect(toParams(fields, toFormValues(fields, defaults), defaults)).toEqual({ params: {}, errors: {} });
  });

  it("types what changed", () => {
    const values = {
      ...toFormValues(fields, defaults),
      max_steps: "120",
      learning_rate: "2e-4",
      lr_scheduler_type: JSON.stringify("cosine"),
      gradient_checkpointing: true,
      target_modules: "q_proj, v_proj",
      ia3_modules: "k_proj",
      prompt_tuning_init_text: "Classify:",
      extra: '{"a": 2}',
    };
    expect(toParams(fields, values, defaults)).toEqual({
      params: {
        max_steps: 120,
        learning_rate: 0.0002,
        lr_scheduler_type: "cosine",
        gradient_checkpointing: true,
        target_modules: ["q_proj", "v_proj"],
        ia3_modules: ["k_proj"],
        prompt_tuning_init_text: "Classify:",
        extra: { a: 2 },
      },
      errors: {},
    });
  });

  it("keeps a single list value a string where the schema allows one", () => {
    const values = { ...toFormValues(fields, defaults), target_modules: "q_proj" };
    expect(toParams(fields, values, defaults).params).toEqual({ target_modules: "q_proj" });
  });

  it("sends null for an emptied nullable field and refuses an emptied number that cannot be null", () => {
    const values = { ...toFormValues(fields, defaults), max_steps: "", learning_rate: " " };
    expect(toParams(fields, values, defaults)).toEqual({
      params: { max_steps: null },
      errors: { "params.learning_rate": "Enter a number" },
    });
  });

  it("never sends NaN: bad numbers become errors at their field path", () => {
    const values = { ...toFormValues(fields, defaults), learning_rate: "1e", max_steps: "1.5" };
    const { params, errors } = toParams(fields, values, defaults);
    expect(params).toEqual({});
    expect(errors).toEqual({ "params.learning_rate": "Enter a number", "params.max_steps": "Enter a whole number" });
  });

  it("round-trips a cloned run's params", () => {
    const cloned = { learning_rate: 0.01, target_modules: ["q_proj", "v_proj"], max_steps: null, precision: "bf16" };
    const values = toFormValues(fields, { ...defaults, ...cloned });
    expect(values.target_modules).toBe("q_proj, v_proj");
    expect(values.max_steps).toBe("");
    expect(toParams(fields, values, defaults).params).toEqual(cloned);
  });
});

describe("assignFieldErrors", () => {
  it("puts errors under the input they belong to and keeps the rest", () => {
    const known = ["params.learning_rate", "params.target_modules", "model"];
    expect(
      assignFieldErrors(
        { "params.learning_rate": "too big", "params.target_modules.0": "bad item", model: "missing", params: "extra field" },
        known,
      ),
    ).toEqual({
      byField: { "params.learning_rate": "too big", "params.target_modules": "bad item", model: "missing" },
      unmatched: [["params", "extra field"]],
    });
  });
});
