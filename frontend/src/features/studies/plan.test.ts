import { describe, expect, it } from "vitest";

import { countRuns, gridOf, parseList, parseSeeds } from "./plan";

describe("study plan", () => {
  it("parses comma-separated values into numbers, words and booleans", () => {
    expect(parseList(" 8, 16 ,cosine, true,")).toEqual([8, 16, "cosine", true]);
    expect(parseSeeds("1, 2")).toEqual([1, 2]);
    expect(parseSeeds("1, x")).toBeNull();
    expect(gridOf([{ param: "r", values: "4,8" }, { param: " ", values: "1" }])).toEqual({ r: [4, 8] });
  });

  it("multiplies only the grid params a method has", () => {
    const paramsOf = (method: string) => (method === "lora" ? ["r", "learning_rate"] : ["learning_rate"]);
    expect(countRuns(["lora", "full"], { r: [4, 8], learning_rate: [1e-3, 2e-3] }, 2, paramsOf)).toBe(4 * 2 + 2 * 2);
    expect(countRuns(["lora"], {}, 3, paramsOf)).toBe(3);
  });
});
