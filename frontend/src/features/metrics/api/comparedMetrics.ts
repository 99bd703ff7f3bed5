import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";

import { statusChanged } from "../statusChanged";
import { metricsQueryOptions } from "./queries";

/**
 * Several runs' metrics (the compare and study views), re-read every `refetchMs` while the caller says a run is
 * active. A run that starts or ends is read at once: its first points, and the last ones that the poll, which
 * stops when no run is active any more, would otherwise miss.
 */
export function useComparedMetrics(runs: readonly { id: number; status: string }[], maxPoints: number, refetchMs: number | false) {
  const metrics = useQuery(metricsQueryOptions(runs.map((run) => run.id), maxPoints, refetchMs));
  const statuses = runs.map((run) => `${run.id}:${run.status}`).join(",");
  const lastStatuses = useRef(statuses);
  const { refetch } = metrics;
  useEffect(() => {
    const before = lastStatuses.current;
    lastStatuses.current = statuses;
    if (statusChanged(before, statuses)) void refetch();
  }, [statuses, refetch]);
  return metrics;
}
