import { describe, expect, it } from "vitest";

import type { Dataset, Run } from "../../api/client";
import { baseRunRefusal, fitToObjective, initialChoice, nextObjective, paramDefaults } from "./launchChoice";
import type { Catalog } from "./launchChoice";

// The next stages the registry declares, as GET /methods publishes them.
const NEXT_STAGES: Record<string, string> = { pretrain: "sft", sft: "dpo" };
const dataset = (id: number, format: Dataset["format"], bundled: boolean) => ({ id, format, bundled, name: `d${id}` }) as Dataset;
const method = (name: string, objectives: string[]) => ({
  name, objectives, title: name, description: "", peft: true, requires_cuda: false, defaults: {}, params_schema: {},
});
const objective = (name: string, dataset_formats: string[], extra: Partial<Catalog["objectives"][number]> = {}) => ({
  name, title: name.toUpperCase(), description: "", dataset_formats, metric_keys: [], reports_perplexity: true,
  is_default: name === "sft", learning_rate_scale: 1, next_stage: NEXT_STAGES[name] ?? null, params_schema: {}, reward_run_param: null, scores_text: false, defaults: {}, method_defaults: {}, ...extra,
});

const catalog: Catalog = {
  objectives: [
    objective("sft", ["instruction", "chat", "text"]),
    objective("dpo", ["preference"], {
      learning_rate_scale: 0.025, defaults: { beta: 0.1 }, method_defaults: { lora: { learning_rate: 5e-6 } },
    }),
  ],
  methods: [method("full", ["sft"]), method("lora", ["sft", "dpo"])],
  models: [
    { name: "big", title: "Big", description: "", available: false, how_to_get: "make models", path: null, source: "package", param_defaults: {} },
    {
      name: "tunelab-tiny", title: "Tiny", description: "", available: true, how_to_get: null, path: null, source: "bundled",
      param_defaults: { lora: { learning_rate: 5e-3, warmup_ratio: 0 } },
    },
  ],
  datasets: [dataset(5, "instruction", false), dataset(1, "instruction", true), dataset(2, "preference", true)],
};

describe("launch form defaults", () => {
  it("pre-selects the bundled model and the bundled dataset the objective accepts", () => {
    expect(initialChoice(catalog)).toMatchObject({ objective: "sft", method: "full", model: "tunelab-tiny", dataset: "1", name: "" });
  });

  it("refits method and dataset when the objective changes", () => {
    expect(fitToObjective(catalog, initialChoice(catalog), "dpo")).toMatchObject({ method: "lora", dataset: "2" });
  });

  it("copies a cloned run's choices and params", () => {
    const run = {
      name: "lr-sweep-3",
      objective: "sft",
      method: "lora",
      model: "tunelab-tiny",
      dataset_id: 5,
      queue: "gpu",
      config: { params: { learning_rate: 0.01 } },
    } as unknown as Run;
    expect(initialChoice(catalog, run)).toEqual({
      name: "lr-sweep-3 (clone)",
      objective: "sft",
      method: "lora",
      model: "tunelab-tiny",
      dataset: "5",
      queue: "gpu",
      seedParams: { learning_rate: 0.01 },
    });
  });

  it("starts from a run's weights at the next stage, on its base model, method and queue, with a dataset that fits", () => {
    const parent = { id: 4, name: "sft-1", objective: "sft", method: "lora", model: "big", queue: "gpu", config: { params: { r: 64 } } };
    expect(initialChoice(catalog, undefined, parent as unknown as Run)).toEqual({
      name: "",
      objective: "dpo",
      method: "lora",
      model: "big",
      dataset: "2",
      queue: "gpu",
      seedParams: {},
    });
    // A method the next stage does not train with gives way to one it does.
    expect(initialChoice(catalog, undefined, { ...parent, method: "full" } as unknown as Run)).toMatchObject({ objective: "dpo", method: "lora" });
  });

  it("keeps a clone's own choices when it also starts from a run", () => {
    const source = { name: "dpo-1", objective: "dpo", method: "lora", model: "big", dataset_id: 2, queue: "cpu", config: { params: {} } };
    const parent = { id: 4, name: "sft-1", objective: "sft", method: "full", model: "big", queue: "gpu", config: {} };
    expect(initialChoice(catalog, source as unknown as Run, parent as unknown as Run)).toMatchObject({
      name: "dpo-1 (clone)", objective: "dpo", method: "lora", dataset: "2", queue: "cpu",
    });
  });

  it("takes the next stage the catalog declares (SFT after pretraining, DPO after SFT), else the parent's objective", () => {
    const staged: Catalog = { ...catalog, objectives: [...catalog.objectives, objective("pretrain", ["text"]), objective("orpo", ["preference"])] };
    expect(nextObjective(staged, "pretrain")).toBe("sft");
    expect(nextObjective(staged, "sft")).toBe("dpo");
    expect(nextObjective(staged, "dpo")).toBe("dpo");
    expect(nextObjective(staged, "orpo")).toBe("orpo");
    // The catalog decides, not the page: a server declaring ORPO after SFT gets ORPO.
    const orpoAfterSft = staged.objectives.map((o) => (o.name === "sft" ? { ...o, next_stage: "orpo" } : o));
    expect(nextObjective({ ...staged, objectives: orpoAfterSft }, "sft")).toBe("orpo");
    // A next stage this server does not offer, or an objective it no longer has.
    expect(nextObjective({ ...staged, objectives: staged.objectives.filter((o) => o.name !== "dpo") }, "sft")).toBe("sft");
    expect(nextObjective(catalog, "gone")).toBe("sft");
  });

  it("refuses to start from a run that did not succeed or was trained elsewhere", () => {
    const run = { id: 4, name: "sft-1", status: "succeeded", external: false } as const;
    expect(baseRunRefusal(run)).toBeNull();
    expect(baseRunRefusal({ ...run, status: "failed" })).toBe("Run #4 sft-1 is failed: only a succeeded run's trained weights can be started from.");
    expect(baseRunRefusal({ ...run, status: "running" })).toMatch(/is running/);
    expect(baseRunRefusal({ ...run, external: true })).toBe("Run #4 sft-1 was trained outside Tunelab: its weights are not here to start from.");
  });

  it("starts a method's params from its defaults, with the chosen model's own on top", () => {
    const lora = { ...method("lora", ["sft"]), defaults: { learning_rate: 2e-4, warmup_ratio: 0.03, r: 8 } };
    const [big, tiny] = catalog.models;
    expect(paramDefaults(lora, tiny)).toEqual({ learning_rate: 5e-3, warmup_ratio: 0, r: 8 });
    expect(paramDefaults(lora, big)).toEqual(lora.defaults);
    expect(paramDefaults({ ...lora, name: "full" }, tiny)).toEqual(lora.defaults);
    expect(paramDefaults(lora, undefined)).toEqual(lora.defaults);
  });

  it("adds the objective's own params and its changes to the method's defaults, scaling the model's learning rate", () => {
    const lora = { ...method("lora", ["sft", "dpo"]), defaults: { learning_rate: 2e-4, warmup_ratio: 0.03, r: 8 } };
    const [big, tiny] = catalog.models;
    const dpo = catalog.objectives[1];
    expect(paramDefaults(lora, big, dpo)).toEqual({ learning_rate: 5e-6, warmup_ratio: 0.03, r: 8, beta: 0.1 });
    expect(paramDefaults(lora, tiny, dpo)).toEqual({ learning_rate: 1.25e-4, warmup_ratio: 0, r: 8, beta: 0.1 });
  });
});
