import { describe, expect, it } from "vitest";

import { parseSelection } from "./selection";

describe("parseSelection", () => {
  it("reads ids in order without duplicates", () => {
    expect(parseSelection("3, 1,3,2")).toEqual({ kind: "ok", ids: [3, 1, 2] });
  });
  it("tells none, invalid and too many apart", () => {
    expect(parseSelection(null)).toEqual({ kind: "none" });
    expect(parseSelection(" , ")).toEqual({ kind: "none" });
    expect(parseSelection("1,abc,0")).toEqual({ kind: "invalid", tokens: ["abc", "0"] });
    expect(parseSelection(Array.from({ length: 21 }, (_, i) => i + 1).join(","))).toEqual({ kind: "too-many", count: 21 });
  });
});
