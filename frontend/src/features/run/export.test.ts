import { describe, expect, it } from "vitest";

import { exportInProgress, exportStatusLabel } from "./export";

describe("export status", () => {
  it("is in progress while queued or running only", () => {
    expect(exportInProgress(undefined)).toBe(false);
    expect(exportInProgress({ status: "queued" })).toBe(true);
    expect(exportInProgress({ status: "running" })).toBe(true);
    expect(exportInProgress({ status: "succeeded" })).toBe(false);
    expect(exportInProgress({ status: "failed" })).toBe(false);
  });

  it("says how the newest export stands, and why one failed", () => {
    expect(exportStatusLabel(undefined)).toBe("");
    expect(exportStatusLabel({ status: "running", status_reason: null })).toBe("Merging the adapter into its base…");
    expect(exportStatusLabel({ status: "succeeded", status_reason: null })).toBe("Merged model ready");
    expect(exportStatusLabel({ status: "failed", status_reason: "OSError: disk full" })).toBe(
      "Export failed: OSError: disk full",
    );
  });
});
