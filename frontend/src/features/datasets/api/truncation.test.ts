import { describe, expect, it } from "vitest";

import { describeTruncation } from "./truncation";

describe("truncation note", () => {
  it("says how many rows a max length cuts and how many tokens it drops", () => {
    expect(describeTruncation({ max_length: 32, rows: 12, truncated_rows: 6, truncated_tokens: 240 })).toBe(
      "6 of 12 rows (50 %) are longer than 32 tokens: training cuts them, dropping 240 tokens.",
    );
  });

  it("says so when nothing is cut", () => {
    expect(describeTruncation({ max_length: 256, rows: 600, truncated_rows: 0, truncated_tokens: 0 })).toBe(
      "No row is longer than 256 tokens: nothing is cut.",
    );
  });
});
