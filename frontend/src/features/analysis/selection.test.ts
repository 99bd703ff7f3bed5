import { describe, expect, it } from "vitest";

import { MAX_ANALYSIS_RUNS, analysisHref, parseAnalysisRuns } from "./selection";

describe("parseAnalysisRuns", () => {
  it("reads ids, without repeats, up to 200", () => {
    expect(parseAnalysisRuns(null)).toEqual({ kind: "none" });
    expect(parseAnalysisRuns(" 3, 1,3 ,")).toEqual({ kind: "ok", ids: [3, 1] });
    expect(parseAnalysisRuns("1,x,0")).toEqual({ kind: "invalid", tokens: ["x", "0"] });
    const many = Array.from({ length: MAX_ANALYSIS_RUNS }, (_, i) => i + 1);
    expect(parseAnalysisRuns(many.join(","))).toEqual({ kind: "ok", ids: many });
    expect(parseAnalysisRuns([...many, 999].join(","))).toEqual({ kind: "too-many", count: MAX_ANALYSIS_RUNS + 1 });
  });

  it("makes the page's address for runs in their order", () => {
    expect(analysisHref([5, 2, 9])).toBe("/analysis?runs=5,2,9");
  });
});
