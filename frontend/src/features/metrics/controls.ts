// Chart controls kept in the URL, so a shared link shows the same view.
import { useCallback } from "react";
import { useSearchParams } from "react-router";

import type { XAxisKind } from "../../lib/series";

export type ChartControlsState = { smoothing: number; logY: boolean; xKind: XAxisKind };

const X_KINDS: XAxisKind[] = ["step", "time", "tokens"];
export const DEFAULT_SMOOTHING = 0.6;

export function useChartControls(): [ChartControlsState, (patch: Partial<ChartControlsState>) => void] {
  const [params, setParams] = useSearchParams();
  const rawSmooth = params.get("smooth");
  const parsed = rawSmooth === null ? DEFAULT_SMOOTHING : Number(rawSmooth);
  const smoothing = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 0.99) : DEFAULT_SMOOTHING;
  const x = params.get("x") as XAxisKind | null;
  const state: ChartControlsState = {
    smoothing,
    logY: params.get("log") === "1",
    xKind: x && X_KINDS.includes(x) ? x : "step",
  };
  const update = useCallback(
    (patch: Partial<ChartControlsState>) => {
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          if (patch.smoothing !== undefined) next.set("smooth", String(patch.smoothing));
          if (patch.logY !== undefined) {
            if (patch.logY) next.set("log", "1");
            else next.delete("log");
          }
          if (patch.xKind !== undefined) {
            if (patch.xKind === "step") next.delete("x");
            else next.set("x", patch.xKind);
          }
          return next;
        },
        { replace: true },
      );
    },
    [setParams],
  );
  return [state, update];
}
