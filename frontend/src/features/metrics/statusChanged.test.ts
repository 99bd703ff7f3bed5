import { describe, expect, it } from "vitest";

import { statusChanged } from "./statusChanged";

describe("statusChanged", () => {
  it("is true when a run of both lists starts or ends", () => {
    expect(statusChanged("1:succeeded,2:queued", "1:succeeded,2:running")).toBe(true);
    expect(statusChanged("1:running,2:running", "1:running,2:succeeded")).toBe(true);
  });

  it("ignores runs that only came or went, and an unchanged list", () => {
    expect(statusChanged("", "1:running,2:queued")).toBe(false);
    expect(statusChanged("1:running", "1:running,2:queued")).toBe(false);
    expect(statusChanged("1:running,2:queued", "1:running,2:queued")).toBe(false);
  });
});
