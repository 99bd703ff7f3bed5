import { describe, expect, it } from "vitest";

import type { Dataset, Run } from "../../api/client";
import { fitToObjective, initialChoice } from "./launchChoice";
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
    { name: "big", title: "Big", description: "", available: false, how_to_get: "make models", path: null, source: "package" },
    { name: "tunelab-tiny", title: "Tiny", description: "", available: true, how_to_get: null, path: null, source: "bundled" },
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
});
