import { describe, expect, it } from "vitest";

import type { Run } from "../../../api/client";
import { splitTags } from "./BulkActions";
import { scalarParamNames } from "./ColumnChooser";
import { mergeResults } from "./RunPicker";

const run = (id: number, params: Record<string, unknown> = {}) => ({ id, config: { params } }) as unknown as Run;

describe("picking and tagging runs", () => {
  it("merges name and tag matches without repeats, newest first, up to the limit", () => {
    expect(mergeResults([run(1), run(3)], [run(3), run(2)]).map((r) => r.id)).toEqual([3, 2, 1]);
    expect(mergeResults([run(1), run(2), run(3)], [], 2).map((r) => r.id)).toEqual([3, 2]);
  });

  it("splits comma-separated tags, trimmed, without empties or repeats", () => {
    expect(splitTags(" a, b ,,a,  ")).toEqual(["a", "b"]);
    expect(splitTags("")).toEqual([]);
  });

  it("offers scalar params as columns, not lists or objects", () => {
    expect(scalarParamNames([run(1, { r: 8, target_modules: ["q"], packing: true }), run(2, { lr: 0.1, nested: {} })])).toEqual([
      "lr",
      "packing",
      "r",
    ]);
  });
});
