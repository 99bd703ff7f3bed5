import { describe, expect, it } from "vitest";

import type { Dataset, Run } from "../../api/client";
import { fitToObjective, initialChoice, paramDefaults } from "./launchChoice";
import type { Catalog } from "./launchChoice";

const dataset = (id: number, format: Dataset["format"], bundled: boolean) => ({ id, format, bundled, name: `d${id}` }) as Dataset;
const method = (name: string, objectives: string[]) => ({ name, objectives, title: name, description: "", peft: true, defaults: {}, params_schema: {} });

const catalog: Catalog = {
  objectives: [
    { name: "sft", title: "SFT", description: "", dataset_formats: ["instruction", "chat", "text"] },
    { name: "dpo", title: "DPO", description: "", dataset_formats: ["preference"] },
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

  it("starts a method's params from its defaults, with the chosen model's own on top", () => {
    const lora = { ...method("lora", ["sft"]), defaults: { learning_rate: 2e-4, warmup_ratio: 0.03, r: 8 } };
    const [big, tiny] = catalog.models;
    expect(paramDefaults(lora, tiny)).toEqual({ learning_rate: 5e-3, warmup_ratio: 0, r: 8 });
    expect(paramDefaults(lora, big)).toEqual(lora.defaults);
    expect(paramDefaults({ ...lora, name: "full" }, tiny)).toEqual(lora.defaults);
    expect(paramDefaults(lora, undefined)).toEqual(lora.defaults);
  });
});
