import { QueryClientProvider } from "@tanstack/react-query";
import { renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { describe, expect, it } from "vitest";

import { fakeNetwork, json } from "../../../test/network";
import { testQueryClient } from "../../../test/render";
import { useComparedMetrics } from "./comparedMetrics";

type Runs = { id: number; status: string }[];

describe("useComparedMetrics", () => {
  it("reads the metrics again when a run ends, after its poll has stopped", async () => {
    let reads = 0;
    fakeNetwork((request) => {
      expect(new URL(request.url).pathname).toBe("/api/v1/metrics/query");
      reads += 1;
      return json({ data: [] });
    });
    const client = testQueryClient();
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
    // No poll at all (refetchMs false): only a status change can cause a second read.
    const { rerender } = renderHook(({ runs }: { runs: Runs }) => useComparedMetrics(runs, 1000, false), {
      wrapper,
      initialProps: { runs: [{ id: 1, status: "succeeded" }, { id: 2, status: "running" }] },
    });
    await waitFor(() => expect(reads).toBe(1));

    rerender({ runs: [{ id: 1, status: "succeeded" }, { id: 2, status: "running" }] });
    rerender({ runs: [{ id: 1, status: "succeeded" }, { id: 2, status: "succeeded" }] });
    await waitFor(() => expect(reads).toBe(2));
  });
});
