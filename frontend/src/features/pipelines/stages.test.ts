import { describe, expect, it } from "vitest";

import type { Dataset } from "../../api/client";
import {
  chainText,
  datasetsForFormats,
  draftOf,
  finalRunIds,
  initialDatasetId,
  rewardedByText,
  splitStageErrors,
  stageLabel,
  stagePayload,
  startsFromText,
} from "./stages";

function dataset(id: number, name: string, format: string, bundled: boolean): Dataset {
  return { id, name, format, bundled } as Dataset;
}

const DATASETS = [
  dataset(1, "my-chat", "chat", false),
  dataset(2, "tiny-tasks", "instruction", true),
  dataset(3, "tiny-preferences", "preference", true),
  dataset(4, "my-prefs", "preference", false),
  dataset(5, "tiny-tasks", "instruction", false),
];
const NAMES = ["SFT", "Reward model", "GRPO"];
const GRPO = {
  name: "GRPO",
  objective: "grpo",
  method: "lora",
  dataset_formats: ["prompt", "instruction"],
  suggested_dataset: "tiny-tasks",
  params: { reward_exact_match: 0 },
  start_from: 1,
  reward_from: 2,
};

describe("stage labels", () => {
  it("names a stage by its number from 1", () => {
    expect(stageLabel(0, "SFT")).toBe("Stage 1 · SFT");
    expect(stageLabel(2, "GRPO")).toBe("Stage 3 · GRPO");
  });

  it("says what a stage starts from: the stage before it by default, a given stage, or the base model", () => {
    expect(startsFromText(NAMES, 0, null)).toBe("starts from the base model");
    expect(startsFromText(NAMES, 1, null)).toBe("starts from stage 1's weights (SFT)");
    expect(startsFromText(NAMES, 2, 1)).toBe("starts from stage 1's weights (SFT)");
    expect(startsFromText(NAMES, 2, 0)).toBe("starts from the base model");
  });

  it("says which stage's model rewards an online RL stage", () => {
    expect(rewardedByText(NAMES, 2)).toBe("rewarded by stage 2's model (Reward model)");
    expect(rewardedByText(NAMES, null)).toBeNull();
  });

  it("chains the stage names for the list", () => {
    expect(chainText(NAMES.map((name) => ({ name })))).toBe("SFT → Reward model → GRPO");
  });
});

describe("stage datasets", () => {
  it("keeps the datasets in the stage's formats, bundled first", () => {
    expect(datasetsForFormats(DATASETS, ["preference"]).map((d) => d.id)).toEqual([3, 4]);
    expect(datasetsForFormats(DATASETS, ["prompt", "instruction"]).map((d) => d.id)).toEqual([2, 5]);
    expect(datasetsForFormats(DATASETS, ["text"])).toEqual([]);
  });

  it("preselects the suggested dataset by name, the bundled one before an upload of the same name", () => {
    expect(initialDatasetId(DATASETS, GRPO)).toBe("2");
    expect(initialDatasetId(DATASETS, { dataset_formats: ["preference"], suggested_dataset: "tiny-preferences" })).toBe("3");
  });

  it("falls back to the first dataset that fits, or none", () => {
    expect(initialDatasetId(DATASETS, { dataset_formats: ["chat"], suggested_dataset: "tiny-chat" })).toBe("1");
    expect(initialDatasetId(DATASETS, { dataset_formats: ["text"], suggested_dataset: null })).toBe("");
  });
});

describe("stagePayload", () => {
  it("sends the stage with its dataset as a number, its params, and the references the template set", () => {
    const draft = draftOf(GRPO, DATASETS);
    expect(stagePayload(draft, { max_steps: 2, reward_exact_match: 0 })).toEqual({
      name: "GRPO",
      objective: "grpo",
      method: "lora",
      dataset_id: 2,
      params: { max_steps: 2, reward_exact_match: 0 },
      start_from: 1,
      reward_from: 2,
    });
  });

  it("leaves start_from and reward_from out where the template does not set them (the stage before; no reward model)", () => {
    const draft = draftOf({ ...GRPO, objective: "sft", start_from: null, reward_from: null }, DATASETS);
    const payload = stagePayload(draft, {});
    expect("start_from" in payload).toBe(false);
    expect("reward_from" in payload).toBe(false);
  });
});

describe("splitStageErrors", () => {
  it("puts each stage's errors with its stage and the pipeline's own apart", () => {
    const split = splitStageErrors({
      "stages.1.params.max_steps": "Input should be greater than 0",
      "stages.2.reward_from": "not a reward run",
      "stages.0": "stage 1 failed",
      name: "Give the pipeline a name",
    });
    expect(split.byStage).toEqual({
      0: { "stages.0": "stage 1 failed" },
      1: { "stages.1.params.max_steps": "Input should be greater than 0" },
      2: { "stages.2.reward_from": "not a reward run" },
    });
    expect(split.rest).toEqual({ name: "Give the pipeline a name" });
  });
});

describe("finalRunIds", () => {
  it("takes the picked pipelines' final runs, skipping one whose last stage has not started", () => {
    const pipelines = [
      { id: 1, final_run_id: 10 },
      { id: 2, final_run_id: null },
      { id: 3, final_run_id: 30 },
    ];
    expect(finalRunIds(pipelines, new Set([3, 2, 1]))).toEqual([10, 30]);
    expect(finalRunIds(pipelines, new Set())).toEqual([]);
  });
});
