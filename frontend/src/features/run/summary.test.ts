import { describe, expect, it } from "vitest";

import { evalLossLabel, shownTokensPerSecond } from "./summary";

describe("evalLossLabel", () => {
  it("calls the eval loss final only once the run has succeeded", () => {
    expect(evalLossLabel("succeeded")).toBe("Final eval loss");
  });

  it("calls it the latest while the run waits or trains", () => {
    expect(evalLossLabel("running")).toBe("Latest eval loss");
    expect(evalLossLabel("queued")).toBe("Latest eval loss");
  });

  it("calls it the last of a run that stopped early", () => {
    expect(evalLossLabel("failed")).toBe("Last eval loss");
    expect(evalLossLabel("canceled")).toBe("Last eval loss");
  });
});

describe("shownTokensPerSecond", () => {
  const series = { key: "train/tokens_per_second", downsampled: false, step: [10, 20, 30, 40], value: [100, 110, 120, 900], wall_time: [1, 2, 3, 4], min: null, max: null };

  it("shows a resumed run's current attempt, never an earlier attempt's summary or points", () => {
    const resumed = { status: "running", attempt: 2, checkpoint_step: 30, tokens_per_second: 115 } as const;
    expect(shownTokensPerSecond(resumed, series)).toBe(900);
    expect(shownTokensPerSecond(resumed, { ...series, step: [10, 20, 30], value: [100, 110, 120] })).toBeNull();
    expect(shownTokensPerSecond({ ...resumed, attempt: 1, tokens_per_second: null }, series)).toBe(900);
  });

  it("shows an ended run's summary", () => {
    expect(shownTokensPerSecond({ status: "succeeded", attempt: 2, checkpoint_step: 40, tokens_per_second: 500 }, series)).toBe(500);
  });
});
