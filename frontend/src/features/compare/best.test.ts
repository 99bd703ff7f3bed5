import { describe, expect, it } from "vitest";

import { bestIndexes } from "./best";

describe("bestIndexes", () => {
  it("finds the lowest or highest, skipping missing values, keeping ties", () => {
    expect([...bestIndexes([3, null, 1, 1], "low")]).toEqual([2, 3]);
    expect([...bestIndexes([3, undefined, 5], "high")]).toEqual([2]);
    expect(bestIndexes([null, null], "low").size).toBe(0);
  });
});
