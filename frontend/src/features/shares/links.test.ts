import { describe, expect, it } from "vitest";

import type { Schemas } from "../../api/client";
import { linksShowing, sharedRunsPath, shareState } from "./links";

function share(id: number, runIds: number[], extra: Partial<Schemas["SharePublic"]> = {}): Schemas["SharePublic"] {
  return {
    id,
    project_id: 1,
    kind: runIds.length === 1 ? "run" : "comparison",
    run_ids: runIds,
    title: `link ${id}`,
    allow_downloads: false,
    created_by: "ada@example.com",
    created_at: "2025-03-01T00:00:00Z",
    expires_at: null,
    revoked_at: null,
    last_opened_at: null,
    open_count: 0,
    active: true,
    ...extra,
  };
}

describe("sharedRunsPath", () => {
  it("points at the run page or the comparison", () => {
    expect(sharedRunsPath(share(1, [4]))).toBe("/runs/4");
    expect(sharedRunsPath(share(2, [4, 5]))).toBe("/compare?runs=4,5");
  });

  it("points a pipeline's link at the pipeline page, whatever its runs", () => {
    expect(sharedRunsPath(share(3, [4, 5], { kind: "pipeline", pipeline_id: 9 }))).toBe("/pipelines/9");
  });
});

describe("linksShowing", () => {
  it("keeps the links that include every one of the runs", () => {
    const links = [share(1, [4]), share(2, [4, 5]), share(3, [5, 6])];
    expect(linksShowing(links, [4]).map((l) => l.id)).toEqual([1, 2]);
    expect(linksShowing(links, [4, 5]).map((l) => l.id)).toEqual([2]);
    expect(linksShowing(links, [7])).toEqual([]);
  });
});

describe("shareState", () => {
  const now = Date.parse("2025-03-10T00:00:00Z");
  it("tells revoked, expired and active links apart", () => {
    expect(shareState(share(1, [1], { revoked_at: "2025-03-02T00:00:00Z" }), now)).toBe("revoked");
    expect(shareState(share(1, [1], { expires_at: "2025-03-09T00:00:00Z" }), now)).toBe("expired");
    expect(shareState(share(1, [1], { expires_at: "2025-03-11T00:00:00Z" }), now)).toBe("active");
    expect(shareState(share(1, [1]), now)).toBe("active");
  });
});
