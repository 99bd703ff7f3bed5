import { describe, expect, it } from "vitest";

import { previewPage } from "./previewPaging";

describe("preview paging", () => {
  it("offers only the next page on the first", () => {
    expect(previewPage(0, 10, 25, 10)).toEqual({ label: "Rows 1–10 of 25", previousOffset: null, nextOffset: 10 });
  });

  it("offers both in the middle", () => {
    expect(previewPage(10, 10, 25, 10)).toEqual({ label: "Rows 11–20 of 25", previousOffset: 0, nextOffset: 20 });
  });

  it("offers only the previous page on the last, short one", () => {
    expect(previewPage(20, 5, 25, 10)).toEqual({ label: "Rows 21–25 of 25", previousOffset: 10, nextOffset: null });
  });

  it("brings an offset past the end back to the last full page", () => {
    expect(previewPage(40, 0, 25, 10)).toEqual({ label: "No rows here (25 in all)", previousOffset: 15, nextOffset: null });
  });

  it("offers no page when every row fits on one", () => {
    expect(previewPage(0, 3, 3, 10)).toEqual({ label: "Rows 1–3 of 3", previousOffset: null, nextOffset: null });
  });
});
