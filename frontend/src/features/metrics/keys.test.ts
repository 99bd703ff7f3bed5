import { describe, expect, it } from "vitest";

import { isSmoothable, isSystemKey, sortMetricKeys } from "./keys";

describe("metric keys", () => {
  it("smooths per-step training signals, not evaluations or schedules", () => {
    expect(isSmoothable("train/loss")).toBe(true);
    expect(isSmoothable("train/grad_norm")).toBe(true);
    expect(isSmoothable("eval/loss")).toBe(false);
    expect(isSmoothable("train/learning_rate")).toBe(false);
    expect(isSmoothable("system/cpu_percent")).toBe(false);
  });
  it("tells the system figures, charted in their own section, from the training metrics", () => {
    expect(isSystemKey("system/rss_bytes")).toBe(true);
    expect(isSystemKey("train/loss")).toBe(false);
  });
  it("orders known keys first, then the rest alphabetically", () => {
    expect(sortMetricKeys(["zeta", "eval/loss", "alpha", "train/loss"])).toEqual(["train/loss", "eval/loss", "alpha", "zeta"]);
  });
  it("puts a preference run's reward margin before its other reward figures", () => {
    expect(sortMetricKeys(["train/logps/chosen", "train/rewards/chosen", "eval/rewards/margins"])).toEqual([
      "eval/rewards/margins",
      "train/rewards/chosen",
      "train/logps/chosen",
    ]);
  });
});
