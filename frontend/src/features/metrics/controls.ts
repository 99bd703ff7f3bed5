// Chart controls kept in the URL, so a shared link shows the same view.
import { useCallback } from "react";
import { useLocation, useNavigate, useSearchParams } from "react-router";

import type { XAxisKind } from "../../lib/series";

export type ChartControlsState = { smoothing: number; logY: boolean; xKind: XAxisKind };

const X_KINDS: XAxisKind[] = ["step", "time", "tokens"];
export const DEFAULT_SMOOTHING = 0.6;

/**
 * Change the query string in place, keeping commas readable (?runs=1,2,3 rather than URLSearchParams' %2C),
 * so the URL stays the state a person can read, edit and share.
 */
export function useSearchUpdater(): (change: (params: URLSearchParams) => void, options?: { replace?: boolean }) => void {
  const navigate = useNavigate();
  const location = useLocation();
  return useCallback(
    (change, options) => {
      const next = new URLSearchParams(location.search);
      change(next);
      const search = next.toString().replace(/%2C/gi, ",");
      void navigate({ pathname: location.pathname, search: search ? `?${search}` : "", hash: location.hash }, { replace: options?.replace });
    },
    [navigate, location],
  );
}

export function useChartControls(): [ChartControlsState, (patch: Partial<ChartControlsState>) => void] {
  const [params] = useSearchParams();
  const updateSearch = useSearchUpdater();
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
      updateSearch(
        (next) => {
          if (patch.smoothing !== undefined) next.set("smooth", String(patch.smoothing));
          if (patch.logY !== undefined) {
            if (patch.logY) next.set("log", "1");
            else next.delete("log");
          }
          if (patch.xKind !== undefined) {
            if (patch.xKind === "step") next.delete("x");
            else next.set("x", patch.xKind);
          }
        },
        { replace: true },
      );
    },
    [updateSearch],
  );
  return [state, update];
}
