import { describe, expect, it } from "vitest";

import { evalLossLabel } from "./summary";

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
